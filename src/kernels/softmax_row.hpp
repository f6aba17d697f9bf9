// The numerically stable softmax of one row, shared by attention and the cross-entropy.
#pragma once

#include <type_traits>

#include "kernels/common.hpp"
#include "kernels/fast_math.hpp"
#include "kernels/team.hpp"

namespace zm::kernels {

template <typename A>
struct SoftmaxRow {
  A maximum;  // of the row
  A total;    // sum of exp(x - maximum): log(total) + maximum is the log-sum-exp
};

// x[0..n) becomes exp(x - max(x)), its softmax before the division by the total (for types that
// are their own accumulation type: the cross-entropy then divides in its gradient's pass).
template <typename T>
KOKKOS_INLINE_FUNCTION SoftmaxRow<T> exponentials_in_place(T* x, int64_t n) {
  static_assert(std::is_same_v<T, Acc<T>>, "the exponentials are kept in T");
  const T maximum = lane_max(x, n);
  for (int64_t j = 0; j < n; ++j) x[j] = fast_exp(x[j] - maximum);
  return {maximum, lane_sum<T>(n, [&](int64_t j) { return x[j]; })};
}

// x[0..n) becomes its softmax, in Acc<T>: bf16 rows recompute their exponentials in float rather
// than sum rounded values.
template <typename T>
KOKKOS_INLINE_FUNCTION SoftmaxRow<Acc<T>> softmax_in_place(T* x, int64_t n) {
  using A = Acc<T>;
  if constexpr (std::is_same_v<T, A>) {
    const SoftmaxRow<A> row = exponentials_in_place(x, n);
    const A inverse = A(1) / row.total;
    for (int64_t j = 0; j < n; ++j) x[j] *= inverse;
    return row;
  } else {
    const A maximum = A(lane_max(x, n));
    const A total = lane_sum<A>(n, [&](int64_t j) { return fast_exp(A(x[j]) - maximum); });
    const A inverse = A(1) / total;
    for (int64_t j = 0; j < n; ++j) x[j] = T(fast_exp(A(x[j]) - maximum) * inverse);
    return {maximum, total};
  }
}

// The same over a team, recomputing the exponentials so that no lane reads another's writes.
template <typename T>
KOKKOS_INLINE_FUNCTION SoftmaxRow<Acc<T>> team_softmax_in_place(const TeamMember& team, T* x,
                                                                int64_t n) {
  if (team_is_one_thread(team)) return softmax_in_place(x, n);
  using A = Acc<T>;
  const A maximum = team_max<A>(team, x, n);
  const A total = team_sum<A>(team, n, [&](int64_t j) { return fast_exp(A(x[j]) - maximum); });
  const A inverse = A(1) / total;
  team_for(team, n, [&](int64_t j) { x[j] = T(fast_exp(A(x[j]) - maximum) * inverse); });
  return {maximum, total};
}

}  // namespace zm::kernels
