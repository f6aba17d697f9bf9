// The attention kernels the model runs in every block: causal multi-head self-attention from the
// QKV projection's output to the heads' outputs, and its backward. The model runs the core's
// plain kernels (plain_attention(): kernels/attention.hpp) unless the run's options give others
// (plan/run_extensions.hpp: RunExtensions::attention).
//
// Kernels declare the buffers they use, so that one list is both what the model allocates and
// what the planner prices: GPT's buffer tables hold one row that stands for the kernels' saved
// buffers in each layer and one for their workspace (gpt_buffers.cpp). They also say what their
// backward computes again, which the hardware FLOPs count (model/flops.hpp).
#pragma once

#include <cstdint>
#include <vector>

#include "core/deck.hpp"
#include "core/precision.hpp"
#include "kernels/grad_write.hpp"
#include "kernels/team_shape.hpp"
#include "model/buffer_shape.hpp"

namespace zm {

// One buffer of the kernels, and the kernels' buffers of one category as the model allocated
// them (model/buffer_shape.hpp).
using AttentionBuffer = DeclaredBuffer;
template <typename Real>
using AttentionBuffers = DeclaredBuffers<Real>;

// One layer's attention: B x T tokens of C channels in NH heads (under model parallelism this
// rank's heads and their width), the model's team shape and GEMM arithmetic, the layer's saved
// buffers and the shared workspace.
template <typename Real>
struct AttentionCall {
  kernels::TeamShape shape;
  GemmMath math;
  int64_t B, T, C, NH;
  const AttentionBuffers<Real>& saved;
  const AttentionBuffers<Real>& workspace;
};

// An implementation lives as long as the program (made once, shared by every model).
class AttentionKernels {
 public:
  virtual ~AttentionKernels() = default;

  virtual std::vector<AttentionBuffer> buffers() const = 0;
  // The FLOPs per token, of the whole model, that backward computes again because forward did not
  // keep them (model/flops.hpp's recompute term).
  virtual double recomputed_flops_per_token(const ModelConfig& /*model*/) const { return 0; }

  // out (B,T,C) = attention(qkv); qkv (B,T,3C) holds per token q | k | v, head h at columns
  // [h*hd, (h+1)*hd) of each third. Fills the layer's saved buffers.
  virtual void forward(const AttentionCall<float>& call, float* out, const float* qkv) const = 0;
  // dqkv (B,T,3C) += (or, with Overwrite, =) the gradient of forward given dout (B,T,C), forward's
  // output `out` and what it saved.
  virtual void backward(const AttentionCall<float>& call, float* dqkv, const float* dout,
                        const float* out, kernels::GradWrite write) const = 0;
#if ZEROMINI_HAVE_BF16
  virtual void forward(const AttentionCall<bf16>& call, bf16* out, const bf16* qkv) const = 0;
  virtual void backward(const AttentionCall<bf16>& call, bf16* dqkv, const bf16* dout,
                        const bf16* out, kernels::GradWrite write) const = 0;
#endif
};

// The core's kernels (kernels/attention.hpp): strided-batched GEMMs over every head, which save
// the probabilities, B x NH x T x T per layer.
const AttentionKernels& plain_attention();

}  // namespace zm
