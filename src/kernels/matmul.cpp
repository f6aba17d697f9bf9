#include "kernels/matmul.hpp"

#include "kernels/common.hpp"

namespace zm::kernels {

template <typename T>
void matmul_forward(T* out, const T* inp, const T* weight, const T* bias, int64_t N, int64_t C,
                    int64_t OC) {
  using A = Acc<T>;
  gemm<T>(false, true, N, OC, C, T(1), inp, weight, T(0), out);
  if (!bias) return;
  Kokkos::parallel_for(
      "matmul_forward_bias", RangePolicy(0, N), KOKKOS_LAMBDA(int64_t i) {
        T* o = out + i * OC;
        for (int64_t j = 0; j < OC; ++j) o[j] = T(A(o[j]) + A(bias[j]));
      });
}

template <typename T>
void matmul_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                     int64_t N, int64_t C, int64_t OC, GradWrite dinp_write) {
  const T dinp_beta = dinp_write == GradWrite::Overwrite ? T(0) : T(1);
  if (dinp) gemm<T>(false, false, N, C, OC, T(1), dout, weight, dinp_beta, dinp);
  gemm<T>(true, false, OC, C, N, T(1), dout, inp, T(1), dweight);
  if (!dbias) return;
  // Column sums in a fixed row order in the arithmetic type, parallel over blocks of output
  // channels, added to the gradient once.
  using A = Acc<T>;
  const int64_t blocks = channel_blocks(OC);
  Kokkos::parallel_for(
      "matmul_backward_bias", RangePolicy(0, blocks), KOKKOS_LAMBDA(int64_t block) {
        const int64_t j0 = block * kChannelBlock;
        const int64_t j1 = j0 + kChannelBlock < OC ? j0 + kChannelBlock : OC;
        A sums[kChannelBlock];
        for (int64_t j = j0; j < j1; ++j) sums[j - j0] = A(0);
        for (int64_t i = 0; i < N; ++i) {
          const T* d = dout + i * OC;
          for (int64_t j = j0; j < j1; ++j) sums[j - j0] += A(d[j]);
        }
        for (int64_t j = j0; j < j1; ++j) dbias[j] = T(A(dbias[j]) + sums[j - j0]);
      });
}

#define ZM_INSTANTIATE(T)                                                                       \
  template void matmul_forward<T>(T*, const T*, const T*, const T*, int64_t, int64_t, int64_t); \
  template void matmul_backward<T>(T*, T*, T*, const T*, const T*, const T*, int64_t, int64_t,  \
                                   int64_t, GradWrite);
ZM_INSTANTIATE(float)
ZM_INSTANTIATE(double)
#if ZEROMINI_HAVE_BF16
ZM_INSTANTIATE(bf16)
#endif
#undef ZM_INSTANTIATE

}  // namespace zm::kernels
