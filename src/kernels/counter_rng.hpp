// Counter-based random numbers: a draw is a hash of (key, index), so that a value depends on
// where it lands and never on which thread draws it or in what order (no generator state).
#pragma once

#include <cstdint>

#include "kernels/common.hpp"

namespace zm::kernels {

KOKKOS_INLINE_FUNCTION uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A uniform double in (0, 1] from the top 53 bits.
KOKKOS_INLINE_FUNCTION double unit_interval(uint64_t bits) {
  return (static_cast<double>(bits >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}

}  // namespace zm::kernels
