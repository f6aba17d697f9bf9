#include "kernels/matmul.hpp"

#include "kernels/column_sums.hpp"

namespace zm::kernels {

template <typename T>
void bias_forward(TeamShape shape, T* out, const T* bias, int64_t N, int64_t OC) {
  using A = Acc<T>;
  Kokkos::parallel_for(
      "zeromini::matmul_forward_bias", team_policy(shape, N),
      KOKKOS_LAMBDA(const TeamMember& team) {
        T* o = out + team.league_rank() * OC;
        team_for(team, OC, [&](int64_t j) { o[j] = T(A(o[j]) + A(bias[j])); });
      });
}

template <typename T>
void bias_backward(TeamShape shape, T* dbias, const T* dout, int64_t N, int64_t OC,
                   Acc<T>* bias_partials) {
  // Column sums of dout over the rows, in two levels, added to the gradient once.
  using A = Acc<T>;
  block_column_sums<1>(
      shape, "zeromini::matmul_backward_bias", N, OC, bias_partials,
      KOKKOS_LAMBDA(int64_t r, int64_t j, A(&t)[1]) { t[0] = A(dout[r * OC + j]); });
  add_column_partials<1>(
      shape, "zeromini::matmul_backward_bias_sum", N, OC, static_cast<const A*>(bias_partials),
      KOKKOS_LAMBDA(int64_t, int64_t j, A total) { dbias[j] = T(A(dbias[j]) + total); });
}

template <typename T>
void matmul_forward(TeamShape shape, T* out, const T* inp, const T* weight, const T* bias,
                    int64_t N, int64_t C, int64_t OC, GemmMath math, int64_t ld_out) {
  gemm<T>(false, true, N, OC, C, T(1), inp, weight, T(0), out, math, {0, ld_out});
  if (bias) bias_forward(shape, out, bias, N, OC);
}

template <typename T>
void matmul_backward(TeamShape shape, T* dinp, T* dweight, T* dbias, const T* dout, const T* inp,
                     const T* weight, int64_t N, int64_t C, int64_t OC, Acc<T>* bias_partials,
                     GradWrite dinp_write, GemmMath math, int64_t ld_dout) {
  const T dinp_beta = dinp_write == GradWrite::Overwrite ? T(0) : T(1);
  if (dinp) gemm<T>(false, false, N, C, OC, T(1), dout, weight, dinp_beta, dinp, math, {ld_dout});
  gemm<T>(true, false, OC, C, N, T(1), dout, inp, T(1), dweight, math, {ld_dout});
  if (dbias) bias_backward(shape, dbias, dout, N, OC, bias_partials);
}

#define ZM_INSTANTIATE(T)                                                                        \
  template void bias_forward<T>(TeamShape, T*, const T*, int64_t, int64_t);                      \
  template void bias_backward<T>(TeamShape, T*, const T*, int64_t, int64_t, Acc<T>*);            \
  template void matmul_forward<T>(TeamShape, T*, const T*, const T*, const T*, int64_t, int64_t, \
                                  int64_t, GemmMath, int64_t);                                   \
  template void matmul_backward<T>(TeamShape, T*, T*, T*, const T*, const T*, const T*, int64_t, \
                                   int64_t, int64_t, Acc<T>*, GradWrite, GemmMath, int64_t);
ZM_FOR_EACH_KERNEL_REAL(ZM_INSTANTIATE)
#undef ZM_INSTANTIATE

}  // namespace zm::kernels
