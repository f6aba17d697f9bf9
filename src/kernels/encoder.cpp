#include "kernels/encoder.hpp"

#include "kernels/common.hpp"

namespace zm::kernels {

template <typename T>
void encoder_forward(T* out, const int* tokens, const T* wte, const T* wpe, int64_t B, int64_t S,
                     int64_t C) {
  using A = Acc<T>;
  Kokkos::parallel_for(
      "encoder_forward", RangePolicy(0, B * S), KOKKOS_LAMBDA(int64_t bt) {
        const int64_t t = bt % S;
        const T* te = wte + static_cast<int64_t>(tokens[bt]) * C;
        const T* pe = wpe + t * C;
        T* o = out + bt * C;
        for (int64_t c = 0; c < C; ++c) o[c] = T(A(te[c]) + A(pe[c]));
      });
}

template <typename T>
void encoder_backward(T* dwte, T* dwpe, const T* dout, const int* tokens, int64_t B, int64_t S,
                      int64_t C) {
  using A = Acc<T>;
  // Parallel over blocks of channels, sequential over rows: every gradient element receives its
  // contributions in increasing (b, t) order, so the result is the same run after run (no
  // atomics), and the cost is O(B T C), independent of the vocabulary.
  const int64_t blocks = channel_blocks(C);
  Kokkos::parallel_for(
      "encoder_backward_wte", RangePolicy(0, blocks), KOKKOS_LAMBDA(int64_t block) {
        const int64_t c0 = block * kChannelBlock;
        const int64_t c1 = c0 + kChannelBlock < C ? c0 + kChannelBlock : C;
        for (int64_t bt = 0; bt < B * S; ++bt) {
          T* g = dwte + static_cast<int64_t>(tokens[bt]) * C;
          const T* d = dout + bt * C;
          for (int64_t c = c0; c < c1; ++c) g[c] = T(A(g[c]) + A(d[c]));
        }
      });
  // Positions: each (t, c) sums over the batch in the arithmetic type, then adds once.
  Kokkos::parallel_for(
      "encoder_backward_wpe", RangePolicy(0, S * blocks), KOKKOS_LAMBDA(int64_t i) {
        const int64_t t = i / blocks, block = i % blocks;
        const int64_t c0 = block * kChannelBlock;
        const int64_t c1 = c0 + kChannelBlock < C ? c0 + kChannelBlock : C;
        T* g = dwpe + t * C;
        for (int64_t c = c0; c < c1; ++c) {
          A total = A(g[c]);
          for (int64_t b = 0; b < B; ++b) total += A(dout[(b * S + t) * C + c]);
          g[c] = T(total);
        }
      });
}

#define ZM_INSTANTIATE(T)                                                                          \
  template void encoder_forward<T>(T*, const int*, const T*, const T*, int64_t, int64_t, int64_t); \
  template void encoder_backward<T>(T*, T*, const T*, const int*, int64_t, int64_t, int64_t);
ZM_INSTANTIATE(float)
ZM_INSTANTIATE(double)
#if ZEROMINI_HAVE_BF16
ZM_INSTANTIATE(bf16)
#endif
#undef ZM_INSTANTIATE

}  // namespace zm::kernels
