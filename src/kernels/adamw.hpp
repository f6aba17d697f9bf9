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
// Mixed precision: the same update on the fp32 master weights from bf16 or fp32 gradients,
// writing the updated weights' bf16 compute copy to `params`.
template <typename Grad>
void adamw_update_mixed(TeamShape shape, float* master, const Grad* grads, float* m, float* v,
                        bf16* params, int64_t n, const AdamWParams& hp);
#endif

// The same updates over state in host memory (kernels/host_loop.hpp): the same element function,
// so the results are the device's bit for bit.
void host_adamw_update(float* params, const float* grads, float* m, float* v, int64_t n,
                       const AdamWParams& hp);
#if ZEROMINI_HAVE_BF16
template <typename Grad>
void host_adamw_update_mixed(float* master, const Grad* grads, float* m, float* v, bf16* params,
                             int64_t n, const AdamWParams& hp);
#endif

}  // namespace zm::kernels
