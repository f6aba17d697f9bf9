// The wall clock of timings and spans (a timed Phase, comm/phase.hpp, fences around it).
#pragma once

#include <chrono>

#include "core/compat.hpp"

namespace zm {

inline double wall_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

}  // namespace zm
