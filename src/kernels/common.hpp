// Shared helpers for kernel implementations (not part of the kernel API).
#pragma once

#include <cstdint>

#include "core/compat.hpp"
#include "kernels/accumulate.hpp"

namespace zm::kernels {

// Host backends run the kernels as loops the compiler vectorises; GPU backends spread a row
// over a team's threads (team.hpp).
constexpr bool kHostExecution =
    Kokkos::SpaceAccessibility<Kokkos::HostSpace, ExecSpace::memory_space>::accessible;

// Sums and maxima along a row with 8 independent accumulators: a fixed order (deterministic),
// and one the compiler can turn into vector instructions, which a single running sum is not.
template <typename T, typename F>
KOKKOS_INLINE_FUNCTION T lane_sum(int64_t n, F&& term) {
  T acc[8] = {T(0), T(0), T(0), T(0), T(0), T(0), T(0), T(0)};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += term(i + j);
  T rest = T(0);
  for (; i < n; ++i) rest += term(i);
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + rest;
}

template <typename T>
KOKKOS_INLINE_FUNCTION T lane_max(const T* x, int64_t n) {
  T acc[8];
  for (int j = 0; j < 8; ++j) acc[j] = x[0];
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] = x[i + j] > acc[j] ? x[i + j] : acc[j];
  T m = acc[0];
  for (int j = 1; j < 8; ++j) m = acc[j] > m ? acc[j] : m;
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

}  // namespace zm::kernels
