// What the checkpoint writer and reader share: the datasets' names and where each state lives in
// the engine. Internal to src/io.
#pragma once

#include <fmt/format.h>
#include <hdf5.h>

#include <string>

#include "zero/engine.hpp"

namespace zm::checkpoint_format {

// Largest chunk HDF5 allows is 4 GiB; keep chunks well below.
constexpr hsize_t kMaxChunkElements = hsize_t(1) << 28;

constexpr int kStateCount = 3;
inline const char* const kStates[kStateCount] = {"params", "adam_m", "adam_v"};

inline std::string unit_dataset(const char* state, int u) {
  return fmt::format("{}/unit_{:04d}", state, u);
}

inline float* state_at(ZeroEngine& engine, int state, int u, int64_t e) {
  switch (state) {
    case 0:
      return engine.master_at(u, e);  // fp32 whatever the compute precision
    case 1:
      return engine.adam_m_at(u, e);
    default:
      return engine.adam_v_at(u, e);
  }
}

inline const Placement& storage_of(const ZeroEngine& engine, int state) {
  return state == 0 ? engine.master_storage() : engine.optimizer_storage();
}

using HostBuffer = Kokkos::View<float*, HostSpace>;
using DeviceSpan = Kokkos::View<float*, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

}  // namespace zm::checkpoint_format
