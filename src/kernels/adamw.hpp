// AdamW on any contiguous range of parameters (a whole buffer or one rank's shard).
#pragma once

#include <cstdint>

#include "core/compat.hpp"
#include "kernels/team_shape.hpp"

namespace zm::kernels {

struct AdamWParams {
  float lr;  // learning rate of this step (after the schedule)
  float beta1, beta2, eps;
  float weight_decay;  // 0 for ranges that take no decay (biases, LayerNorm)
  float grad_scale;    // multiplies every gradient first (averaging and clipping folded in)
  int64_t step;        // 1-based step count, for bias correction
};

// Same arithmetic and order as PyTorch's torch.optim.AdamW (1.13, single-tensor path, which
// CPU tensors take):
//   g = grad * grad_scale
//   p *= 1 - lr * weight_decay
//   m = m * beta1 + g * (1 - beta1)
//   v = v * beta2 + g * g * (1 - beta2)
//   p += -(lr / (1 - beta1^step)) * m / (sqrt(v) / sqrt(1 - beta2^step) + eps)
// with the bias corrections computed in double on the host, as Python does.
void adamw_update(TeamShape shape, float* params, const float* grads, float* m, float* v, int64_t n,
                  const AdamWParams& hp);

#if ZEROMINI_HAVE_BF16
// Mixed precision: the same update on the fp32 master weights from bf16 gradients (or fp32 ones,
// under train.reduce_precision = "fp32"), writing the updated weights' bf16 compute copy to
// `params`. Grad: bf16 or float.
template <typename Grad>
void adamw_update_mixed(TeamShape shape, float* master, const Grad* grads, float* m, float* v,
                        bf16* params, int64_t n, const AdamWParams& hp);
#endif

// Over state in host memory: the same updates on the host execution space (Kokkos::DefaultHostExecutionSpace:
// its threads over chunks of elements, each chunk one plain loop that the compiler vectorises),
// over state in host memory. The arithmetic and its order are those of adamw_update: the same
// element function, so the results are the device's bit for bit.
void host_adamw_update(float* params, const float* grads, float* m, float* v, int64_t n,
                       const AdamWParams& hp);
#if ZEROMINI_HAVE_BF16
template <typename Grad>
void host_adamw_update_mixed(float* master, const Grad* grads, float* m, float* v, bf16* params,
                             int64_t n, const AdamWParams& hp);
#endif

}  // namespace zm::kernels
