// GPT-2: embeddings, L pre-norm transformer blocks, final LayerNorm, LM head tied to the token
// embedding, mean cross-entropy. Forward and backward are written out layer by layer (llm.c
// style) over the kernels in src/kernels; parameters and gradients are reached per unit through
// UnitAccess, so the same code runs under every ZeRO stage.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/memory.hpp"
#include "kernels/accumulate.hpp"
#include "kernels/token_groups.hpp"
#include "model/layout.hpp"
#include "model/unit_access.hpp"

namespace zm {

// A micro-batch on the device: B sequences of T tokens, and the next-token targets.
struct Batch {
  const int* inputs = nullptr;        // (B, T)
  const int* targets = nullptr;       // (B, T)
  kernels::TokenGroups input_groups;  // the rows of `inputs` grouped by token
};

// What GPT<Real> allocates for micro-batches of B x T with activations of `element_bytes`
// (token buffers are int32 whatever the precision); the planner sums the same list.
std::vector<BufferSpec> gpt_buffer_plan(const ModelConfig& config, int64_t B, int64_t T,
                                        int element_bytes);
// The order in which forward() and backward() acquire units (stage 3 prefetches along it).
std::vector<UnitEvent> gpt_schedule(const ParamLayout& layout);

// Real: the type of parameters, activations and gradients (float, or bf16 under mixed
// precision; bf16 kernels compute in float and round what they store).
template <typename Real>
class GPT {
 public:
  // Allocates the activations and workspace for micro-batches of B x T.
  GPT(const ParamLayout& layout, int64_t B, int64_t T);

  static std::vector<BufferSpec> buffer_plan(const ModelConfig& config, int64_t B, int64_t T) {
    return gpt_buffer_plan(config, B, T, static_cast<int>(sizeof(Real)));
  }

  // Copies a micro-batch (host arrays of B*T tokens) to the device buffers the model owns.
  Batch upload(const int* inputs, const int* targets);

  // Runs the forward pass and returns the micro-batch's mean loss. Keeps what backward needs.
  double forward(UnitAccess<Real>& units, const Batch& batch);
  // Accumulates d(mean loss)/d(params) into units.grads(u), calling grads_ready(u) per unit.
  void backward(UnitAccess<Real>& units, const Batch& batch);

  // Logits of the last forward (N x Vp, before softmax) are not kept: the buffer holds
  // probabilities after forward and dlogits after backward.
  const Real* probabilities() const { return logits_.data(); }

 private:
  using Stat = kernels::Acc<Real>;  // LayerNorm's saved mean and rstd
  struct LayerActs {
    TrackedBuffer<Real> ln1, q, k, v, att, atty, ln2, fch, fch_gelu, residual2, residual3;
    TrackedBuffer<Stat> ln1_mean, ln1_rstd, ln2_mean, ln2_rstd;
  };
  void block_forward(LayerActs& a, const Real* p, const Real* residual, UnitAccess<Real>& units);
  void block_backward(LayerActs& a, const Real* p, Real* g, const Real* residual,
                      UnitAccess<Real>& units);

  const ParamLayout* layout_;
  int64_t B_, T_;
  const Real* head_params_ = nullptr;  // the embedding unit, held from the LM head's forward
  // Saved activations.
  TrackedBuffer<Real> encoded_;
  std::vector<LayerActs> layers_;
  TrackedBuffer<Real> lnf_, logits_, losses_;
  TrackedBuffer<Stat> lnf_mean_, lnf_rstd_;
  TrackedBuffer<int> inputs_, targets_, token_ids_, token_starts_, token_rows_;
  kernels::HostTokenGroups host_groups_;
  // Workspace (reused by every layer).
  TrackedBuffer<Real> qkv_, scratch_btc_, dresidual_, dbtc_, datty_, dqkv_, dfch_, dfch_gelu_,
      att_y_, att_datt_, att_dq_, att_dk_, att_dv_;
  TrackedBuffer<Stat> column_partials_;  // the bias and LayerNorm gradients' two-level sums
};

}  // namespace zm
