#include "kernels/crossentropy.hpp"

#include <type_traits>

#include "kernels/softmax_row.hpp"
#include "kernels/team.hpp"

namespace zm::kernels {

template <typename T>
void softmax_crossentropy_forward(TeamShape shape, T* logits_to_probs, Acc<T>* losses,
                                  const int* targets, int64_t N, int64_t V, int64_t Vp) {
  using A = Acc<T>;
  Kokkos::parallel_for(
      "zeromini::softmax_crossentropy_forward", team_policy(shape, N),
      KOKKOS_LAMBDA(const TeamMember& team) {
        const int64_t i = team.league_rank();
        T* p = logits_to_probs + i * Vp;
        // The loss from the log-sum-exp, not -log(prob), which is infinite where prob underflows.
        // The softmax's reductions synchronise the team before the target's logit is overwritten.
        const A target_logit = A(p[targets[i]]);
        const SoftmaxRow<A> row = team_softmax_in_place(team, p, V);
        team_for(team, Vp - V, [&](int64_t v) { p[V + v] = T(0); });  // padding never wins
        team_single(team, [&] { losses[i] = math::log(row.total) + row.maximum - target_logit; });
      });
}

template <typename T>
void softmax_crossentropy_backward(TeamShape shape, T* probs_to_dlogits, const int* targets,
                                   T dloss, int64_t N, int64_t V, int64_t Vp) {
  using A = Acc<T>;
  const A scale = A(dloss);
  Kokkos::parallel_for(
      "zeromini::softmax_crossentropy_backward", team_policy(shape, N),
      KOKKOS_LAMBDA(const TeamMember& team) {
        const int64_t i = team.league_rank();
        T* p = probs_to_dlogits + i * Vp;
        const int64_t target = targets[i];
        team_for(team, V,
                 [&](int64_t v) { p[v] = T(scale * (A(p[v]) - (v == target ? A(1) : A(0)))); });
        team_for(team, Vp - V, [&](int64_t v) { p[V + v] = T(0); });
      });
}

// One row of the fused cross-entropy by one host thread (false for bf16: the team path runs).
// The division by the total joins the gradient's pass: one pass fewer, the same roundings.
template <typename T>
KOKKOS_INLINE_FUNCTION bool fused_row_in_one_thread(T* p, int64_t target, Acc<T> target_logit,
                                                    Acc<T> scale, int64_t V, int64_t Vp,
                                                    Acc<T>& loss) {
  if constexpr (std::is_same_v<T, Acc<T>>) {
    const SoftmaxRow<T> row = exponentials_in_place(p, V);
    const T inverse = T(1) / row.total;
    const T target_gradient = scale * (p[target] * inverse - T(1));
    for (int64_t v = 0; v < V; ++v) p[v] = scale * (p[v] * inverse);
    p[target] = target_gradient;
    for (int64_t v = V; v < Vp; ++v) p[v] = T(0);
    loss = math::log(row.total) + row.maximum - target_logit;
    return true;
  } else {
    return false;
  }
}

template <typename T>
void softmax_crossentropy_fused(TeamShape shape, T* logits_to_dlogits, Acc<T>* losses,
                                const int* targets, T dloss, int64_t N, int64_t V, int64_t Vp) {
  using A = Acc<T>;
  const A scale = A(dloss);
  Kokkos::parallel_for(
      "zeromini::softmax_crossentropy_fused", team_policy(shape, N),
      KOKKOS_LAMBDA(const TeamMember& team) {
        const int64_t i = team.league_rank();
        T* p = logits_to_dlogits + i * Vp;
        const int64_t target = targets[i];
        // Read before the softmax's reductions (as in softmax_crossentropy_forward).
        const A target_logit = A(p[target]);
        if (team_is_one_thread(team) &&
            fused_row_in_one_thread(p, target, target_logit, scale, V, Vp, losses[i]))
          return;
        const SoftmaxRow<A> row = team_softmax_in_place(team, p, V);
        // Every probability is written before any lane turns its own into a gradient.
        team.team_barrier();
        team_for(team, V,
                 [&](int64_t v) { p[v] = T(scale * (A(p[v]) - (v == target ? A(1) : A(0)))); });
        team_for(team, Vp - V, [&](int64_t v) { p[V + v] = T(0); });
        team_single(team, [&] { losses[i] = math::log(row.total) + row.maximum - target_logit; });
      });
}

#define ZM_INSTANTIATE(T)                                                                        \
  template void softmax_crossentropy_forward<T>(TeamShape, T*, Acc<T>*, const int*, int64_t,     \
                                                int64_t, int64_t);                               \
  template void softmax_crossentropy_backward<T>(TeamShape, T*, const int*, T, int64_t, int64_t, \
                                                 int64_t);                                       \
  template void softmax_crossentropy_fused<T>(TeamShape, T*, Acc<T>*, const int*, T, int64_t,    \
                                              int64_t, int64_t);
ZM_FOR_EACH_KERNEL_REAL(ZM_INSTANTIATE)
#undef ZM_INSTANTIATE

}  // namespace zm::kernels
