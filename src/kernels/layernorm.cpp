#include "kernels/layernorm.hpp"

#include "kernels/column_sums.hpp"

namespace zm::kernels {

template <typename T>
void layernorm_forward(TeamShape shape, T* out, Acc<T>* mean, Acc<T>* rstd, const T* inp,
                       const T* weight, const T* bias, int64_t N, int64_t C) {
  using A = Acc<T>;
  Kokkos::parallel_for(
      "zeromini::layernorm_forward", team_policy(shape, N), KOKKOS_LAMBDA(const TeamMember& team) {
        const int64_t i = team.league_rank();
        const T* x = inp + i * C;
        const A m = team_sum<A>(team, C, [&](int64_t c) { return A(x[c]); }) / static_cast<A>(C);
        const A v = team_sum<A>(team, C, [&](int64_t c) { return (A(x[c]) - m) * (A(x[c]) - m); }) /
                    static_cast<A>(C);
        const A s = A(1) / math::sqrt(v + A(kLayerNormEps));
        T* o = out + i * C;
        team_for(team, C,
                 [&](int64_t c) { o[c] = T((A(x[c]) - m) * s * A(weight[c]) + A(bias[c])); });
        team_single(team, [&] {
          mean[i] = m;
          rstd[i] = s;
        });
      });
}

template <typename T>
void layernorm_backward(TeamShape shape, T* dinp, T* dweight, T* dbias, const T* dout, const T* inp,
                        const T* weight, const Acc<T>* mean, const Acc<T>* rstd, int64_t N,
                        int64_t C, Acc<T>* partials) {
  using A = Acc<T>;
  // Input gradient: a team per row.
  Kokkos::parallel_for(
      "zeromini::layernorm_backward_input", team_policy(shape, N),
      KOKKOS_LAMBDA(const TeamMember& team) {
        const int64_t i = team.league_rank();
        const T* x = inp + i * C;
        const T* d = dout + i * C;
        const A m = mean[i], s = rstd[i];
        const A dnorm_mean =
            team_sum<A>(team, C, [&](int64_t c) { return A(weight[c]) * A(d[c]); }) /
            static_cast<A>(C);
        const A dnorm_norm_mean =
            team_sum<A>(team, C,
                        [&](int64_t c) { return A(weight[c]) * A(d[c]) * ((A(x[c]) - m) * s); }) /
            static_cast<A>(C);
        T* g = dinp + i * C;
        team_for(team, C, [&](int64_t c) {
          const A norm = (A(x[c]) - m) * s;
          const A dnorm = A(weight[c]) * A(d[c]);
          g[c] = T(A(g[c]) + (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s);
        });
      });
  // Parameter gradients: column sums over the rows in two levels, added to the gradients once.
  block_column_sums<2>(
      shape, "zeromini::layernorm_backward_params", N, C, partials,
      KOKKOS_LAMBDA(int64_t r, int64_t c, A(&t)[2]) {
        const A d = A(dout[r * C + c]);
        t[0] = (A(inp[r * C + c]) - mean[r]) * rstd[r] * d;
        t[1] = d;
      });
  add_column_partials<2>(
      shape, "zeromini::layernorm_backward_params_sum", N, C, static_cast<const A*>(partials),
      KOKKOS_LAMBDA(int64_t k, int64_t c, A total) {
        T* g = k == 0 ? dweight : dbias;
        g[c] = T(A(g[c]) + total);
      });
}

#define ZM_INSTANTIATE(T)                                                                  \
  template void layernorm_forward<T>(TeamShape, T*, Acc<T>*, Acc<T>*, const T*, const T*,  \
                                     const T*, int64_t, int64_t);                          \
  template void layernorm_backward<T>(TeamShape, T*, T*, T*, const T*, const T*, const T*, \
                                      const Acc<T>*, const Acc<T>*, int64_t, int64_t, Acc<T>*);
ZM_FOR_EACH_KERNEL_REAL(ZM_INSTANTIATE)
#undef ZM_INSTANTIATE

}  // namespace zm::kernels
