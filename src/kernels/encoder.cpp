#include "kernels/encoder.hpp"

#include "kernels/team.hpp"

namespace zm::kernels {

template <typename T>
void encoder_forward(TeamShape shape, T* out, const int* tokens, const T* wte, const T* wpe,
                     int64_t B, int64_t S, int64_t C) {
  using A = Acc<T>;
  Kokkos::parallel_for(
      "zeromini::encoder_forward", team_policy(shape, B * S),
      KOKKOS_LAMBDA(const TeamMember& team) {
        const int64_t bt = team.league_rank();
        const T* te = wte + static_cast<int64_t>(tokens[bt]) * C;
        const T* pe = wpe + (bt % S) * C;
        T* o = out + bt * C;
        team_for(team, C, [&](int64_t c) { o[c] = T(A(te[c]) + A(pe[c])); });
      });
}

template <typename T>
void encoder_backward(TeamShape shape, T* dwte, T* dwpe, const T* dout, const TokenGroups& groups,
                      int64_t B, int64_t S, int64_t C) {
  using A = Acc<T>;
  // A team per token: each channel sums the token's rows in (b, t) order in the arithmetic type,
  // adds that sum to what the gradient holds (the tied head's part, earlier micro-batches') and
  // is rounded once (rounding every bf16 addition would drop a frequent token's rows). The
  // micro-batch's part is one term: a model held in parts, which sums the head's part in on
  // another rank, adds the same two terms.
  const int* ids = groups.ids;
  const int* starts = groups.starts;
  const int* rows = groups.rows;
  Kokkos::parallel_for(
      "zeromini::encoder_backward_wte", team_policy(shape, groups.count),
      KOKKOS_LAMBDA(const TeamMember& team) {
        const int64_t u = team.league_rank();
        T* g = dwte + static_cast<int64_t>(ids[u]) * C;
        const int begin = starts[u], end = starts[u + 1];
        if (team_is_one_thread(team)) {
          // Rows outside, a tile of channels inside (vectorised): the lanes' order.
          constexpr int64_t kTile = 256;
          for (int64_t c0 = 0; c0 < C; c0 += kTile) {
            const int64_t n = C - c0 < kTile ? C - c0 : kTile;
            A sums[kTile];
            for (int64_t c = 0; c < n; ++c) sums[c] = A(0);
            for (int k = begin; k < end; ++k) {
              const T* d = dout + static_cast<int64_t>(rows[k]) * C + c0;
              for (int64_t c = 0; c < n; ++c) sums[c] += A(d[c]);
            }
            for (int64_t c = 0; c < n; ++c) g[c0 + c] = T(A(g[c0 + c]) + sums[c]);
          }
          return;
        }
        Kokkos::parallel_for(Kokkos::TeamVectorRange(team, C), [&](int64_t c) {
          A total = A(0);
          for (int k = begin; k < end; ++k) total += A(dout[static_cast<int64_t>(rows[k]) * C + c]);
          g[c] = T(A(g[c]) + total);
        });
      });
  Kokkos::parallel_for(
      "zeromini::encoder_backward_wpe", team_policy(shape, S),
      KOKKOS_LAMBDA(const TeamMember& team) {
        const int64_t t = team.league_rank();
        T* g = dwpe + t * C;
        team_for(team, C, [&](int64_t c) {
          A total = A(g[c]);
          for (int64_t b = 0; b < B; ++b) total += A(dout[(b * S + t) * C + c]);
          g[c] = T(total);
        });
      });
}

#define ZM_INSTANTIATE(T)                                                                     \
  template void encoder_forward<T>(TeamShape, T*, const int*, const T*, const T*, int64_t,    \
                                   int64_t, int64_t);                                         \
  template void encoder_backward<T>(TeamShape, T*, T*, const T*, const TokenGroups&, int64_t, \
                                    int64_t, int64_t);
ZM_FOR_EACH_KERNEL_REAL(ZM_INSTANTIATE)
#undef ZM_INSTANTIATE

}  // namespace zm::kernels
