// Shared helpers for kernel implementations (not part of the kernel API).
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/compat.hpp"
#include "kernels/accumulate.hpp"

namespace zm::kernels {

// Host backends run the kernels as loops the compiler vectorises; GPU backends spread a row
// over a team's threads (team.hpp).
constexpr bool kHostExecution =
    Kokkos::SpaceAccessibility<Kokkos::HostSpace, ExecSpace::memory_space>::accessible;

// Sums and maxima along a row in 8 lanes: lane j takes elements j, j + 8, j + 16, ..., and the
// lanes are then joined in a fixed tree. A fixed order (deterministic), and one a vector unit
// runs.
//
// On the host the 8 lanes are GCC vectors: written as 8 scalars or an array, GCC 12 vectorised
// the loop as in-order reductions (a lane at a time, through shuffles), and the fused
// cross-entropy's sum ran 3 times slower than the vector adds it needs. The vectors are of 32
// bytes: 8 floats, or the 8 double lanes as two vectors of 4. Without AVX-512 a vector of 8
// doubles is emulated in pieces, and the sum of squares in double ran 10 times slower in an AVX2
// build; with it, two vectors of 4 ran that sum in 5.0 ms where one of 8 took 6-7. The scalar
// form below is the same order, for device compilers and other hosts.
template <typename T>
struct LaneVector {
  using type = void;  // no vector type: the scalar form
  static constexpr int width = 8;
};
#if defined(__GNUC__) && !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
template <typename T>
struct HostLaneVector {
  static constexpr int width = 8 * sizeof(T) <= 32 ? 8 : 4;
  typedef T type __attribute__((vector_size(width * sizeof(T))));
};
template <>
struct LaneVector<float> : HostLaneVector<float> {};
template <>
struct LaneVector<double> : HostLaneVector<double> {};
#endif

template <typename T, typename F>
KOKKOS_INLINE_FUNCTION T lane_sum(int64_t n, F&& term) {
  using V = typename LaneVector<T>::type;
  int64_t i = 0;
  T acc[8] = {T(0), T(0), T(0), T(0), T(0), T(0), T(0), T(0)};
  if constexpr (std::is_void_v<V>) {
    for (; i + 8 <= n; i += 8)
      for (int j = 0; j < 8; ++j) acc[j] += term(i + j);
  } else if constexpr (LaneVector<T>::width == 8) {
    V lanes = {T(0), T(0), T(0), T(0), T(0), T(0), T(0), T(0)};
    for (; i + 8 <= n; i += 8)
      lanes += V{term(i),     term(i + 1), term(i + 2), term(i + 3),
                 term(i + 4), term(i + 5), term(i + 6), term(i + 7)};
    for (int j = 0; j < 8; ++j) acc[j] = lanes[j];
  } else {
    V low = {T(0), T(0), T(0), T(0)}, high = {T(0), T(0), T(0), T(0)};
    for (; i + 8 <= n; i += 8) {
      low += V{term(i), term(i + 1), term(i + 2), term(i + 3)};
      high += V{term(i + 4), term(i + 5), term(i + 6), term(i + 7)};
    }
    for (int j = 0; j < 4; ++j) {
      acc[j] = low[j];
      acc[4 + j] = high[j];
    }
  }
  T rest = T(0);
  for (; i < n; ++i) rest += term(i);
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + rest;
}

// The largest of x[0..n), n >= 1 (a NaN is skipped unless it is x[0]). The order of the
// comparisons changes no result but the sign of a zero maximum, which no caller sees (x - max).
template <typename T>
KOKKOS_INLINE_FUNCTION T lane_max(const T* x, int64_t n) {
  using V = typename LaneVector<T>::type;
  int64_t i = 0;
  T acc[8];
  for (int j = 0; j < 8; ++j) acc[j] = x[0];
  if constexpr (!std::is_void_v<V> && LaneVector<T>::width == 8) {
    V lanes = {x[0], x[0], x[0], x[0], x[0], x[0], x[0], x[0]};
    for (; i + 8 <= n; i += 8) {
      const V next = {x[i], x[i + 1], x[i + 2], x[i + 3], x[i + 4], x[i + 5], x[i + 6], x[i + 7]};
      lanes = next > lanes ? next : lanes;
    }
    for (int j = 0; j < 8; ++j) acc[j] = lanes[j];
  } else {  // the scalar form (also for doubles: no caller takes their maximum)
    for (; i + 8 <= n; i += 8)
      for (int j = 0; j < 8; ++j) acc[j] = x[i + j] > acc[j] ? x[i + j] : acc[j];
  }
  T m = acc[0];
  for (int j = 1; j < 8; ++j) m = acc[j] > m ? acc[j] : m;
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

}  // namespace zm::kernels
