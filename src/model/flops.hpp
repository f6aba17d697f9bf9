// Floating-point operations of one training step, counted from the model's shape: the one count
// the run's throughput figures (achieved TFLOP/s) and the planner's predicted step time use.
//
// Per token, for the whole model (all ranks of a model-parallel group together):
//   dense      6 N          N = the parameters less the position embedding (a lookup, no
//                           matmul); the token embedding is tied to the LM head and counted once,
//                           as the head's matmul (real vocabulary). 2 FLOPs per weight forward,
//                           4 backward (input and weight gradients). Biases and norms are counted
//                           like weights, as in Kaplan et al.'s and PaLM's 6N.
//   attention  12 L T C     the two attention matmuls, Q K^T and P V (2 T C each forward, twice
//                           that backward), over the full T x T square: causal masking is NOT
//                           halved, as in PaLM (Appendix B) and nanoGPT/llm.c, so the figures
//                           compare with theirs. (Kernels that skip the tiles above the
//                           diagonal do about half of this work.)
//   model      dense + attention: PaLM's "model FLOPs".
//   recompute  work the hardware does again: model.recompute = "blocks" runs each block's
//              forward twice (L (2 (12 C^2 + 13 C) + 4 T C)); attention kernels whose backward
//              recomputes what their forward did not keep add it (e.g. Q K^T: 2 L T C;
//              AttentionKernels::recomputed_flops_per_token).
//   padding    the LM head's matmul over the padded vocabulary rows: 6 C (Vp - V).
//   hardware   model + recompute + padding: what the hardware does and the planner prices.
#pragma once

#include "core/deck.hpp"
#include "model/attention_kernels.hpp"

namespace zm {

struct FlopsPerToken {
  double dense = 0;
  double attention = 0;
  double recompute = 0;
  double padding = 0;
  double model() const { return dense + attention; }
  double hardware() const { return model() + recompute + padding; }
};

// The whole model's FLOPs per token of one forward + backward, running `attention`.
FlopsPerToken flops_per_token(const ModelConfig& model, const AttentionKernels& attention);

// One optimizer step over `global_tokens` tokens (every rank's together), and one rank's share
// of it: the work divides evenly over data-parallel replicas and over a model's slices.
struct StepFlops {
  double model = 0;     // all ranks
  double hardware = 0;  // all ranks
  int64_t ranks = 1;
  double model_per_rank() const { return model / static_cast<double>(ranks); }
  double hardware_per_rank() const { return hardware / static_cast<double>(ranks); }
};
StepFlops step_flops(const ModelConfig& model, const AttentionKernels& attention,
                     double global_tokens, int64_t ranks);

}  // namespace zm
