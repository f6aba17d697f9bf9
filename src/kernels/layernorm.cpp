#include "kernels/layernorm.hpp"

#include "kernels/common.hpp"

namespace zm::kernels {

template <typename T>
void layernorm_forward(T* out, Acc<T>* mean, Acc<T>* rstd, const T* inp, const T* weight,
                       const T* bias, int64_t N, int64_t C) {
  using A = Acc<T>;
  Kokkos::parallel_for(
      "layernorm_forward", RangePolicy(0, N), KOKKOS_LAMBDA(int64_t i) {
        const T* x = inp + i * C;
        const A m = lane_sum<A>(C, [&](int64_t c) { return A(x[c]); }) / static_cast<A>(C);
        const A v = lane_sum<A>(C, [&](int64_t c) { return (A(x[c]) - m) * (A(x[c]) - m); }) /
                    static_cast<A>(C);
        const A s = A(1) / math::sqrt(v + A(kLayerNormEps));
        T* o = out + i * C;
        for (int64_t c = 0; c < C; ++c) o[c] = T((A(x[c]) - m) * s * A(weight[c]) + A(bias[c]));
        mean[i] = m;
        rstd[i] = s;
      });
}

template <typename T>
void layernorm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                        const Acc<T>* mean, const Acc<T>* rstd, int64_t N, int64_t C) {
  using A = Acc<T>;
  // Input gradient: rows are independent.
  Kokkos::parallel_for(
      "layernorm_backward_input", RangePolicy(0, N), KOKKOS_LAMBDA(int64_t i) {
        const T* x = inp + i * C;
        const T* d = dout + i * C;
        const A m = mean[i], s = rstd[i];
        const A dnorm_mean =
            lane_sum<A>(C, [&](int64_t c) { return A(weight[c]) * A(d[c]); }) / static_cast<A>(C);
        const A dnorm_norm_mean =
            lane_sum<A>(C,
                        [&](int64_t c) { return A(weight[c]) * A(d[c]) * ((A(x[c]) - m) * s); }) /
            static_cast<A>(C);
        T* g = dinp + i * C;
        for (int64_t c = 0; c < C; ++c) {
          const A norm = (A(x[c]) - m) * s;
          const A dnorm = A(weight[c]) * A(d[c]);
          g[c] = T(A(g[c]) + (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s);
        }
      });
  // Parameter gradients: reduced over rows in a fixed order in the arithmetic type, parallel
  // over channel blocks, added to the gradient once.
  const int64_t blocks = channel_blocks(C);
  Kokkos::parallel_for(
      "layernorm_backward_params", RangePolicy(0, blocks), KOKKOS_LAMBDA(int64_t block) {
        const int64_t c0 = block * kChannelBlock;
        const int64_t c1 = c0 + kChannelBlock < C ? c0 + kChannelBlock : C;
        A dw[kChannelBlock], db[kChannelBlock];
        for (int64_t c = c0; c < c1; ++c) dw[c - c0] = db[c - c0] = A(0);
        for (int64_t i = 0; i < N; ++i) {
          const T* x = inp + i * C;
          const T* d = dout + i * C;
          const A m = mean[i], s = rstd[i];
          for (int64_t c = c0; c < c1; ++c) {
            dw[c - c0] += (A(x[c]) - m) * s * A(d[c]);
            db[c - c0] += A(d[c]);
          }
        }
        for (int64_t c = c0; c < c1; ++c) {
          dweight[c] = T(A(dweight[c]) + dw[c - c0]);
          dbias[c] = T(A(dbias[c]) + db[c - c0]);
        }
      });
}

#define ZM_INSTANTIATE(T)                                                                         \
  template void layernorm_forward<T>(T*, Acc<T>*, Acc<T>*, const T*, const T*, const T*, int64_t, \
                                     int64_t);                                                    \
  template void layernorm_backward<T>(T*, T*, T*, const T*, const T*, const T*, const Acc<T>*,    \
                                      const Acc<T>*, int64_t, int64_t);
ZM_INSTANTIATE(float)
ZM_INSTANTIATE(double)
#if ZEROMINI_HAVE_BF16
ZM_INSTANTIATE(bf16)
#endif
#undef ZM_INSTANTIATE

}  // namespace zm::kernels
