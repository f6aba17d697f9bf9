#include "model/flops.hpp"

#include "model/layout.hpp"

namespace zm {

FlopsPerToken flops_per_token(const ModelConfig& m, const AttentionKernels& attention) {
  const double L = static_cast<double>(m.layers), C = static_cast<double>(m.dim),
               T = static_cast<double>(m.seq_len), V = static_cast<double>(m.vocab),
               Vp = static_cast<double>(m.padded_vocab());
  // The whole model's layout: its real-vocabulary count holds wte once (tied head).
  const double position_embedding = T * C;
  const double n = static_cast<double>(ParamLayout(m).real_param_count()) - position_embedding;
  FlopsPerToken f;
  f.dense = 6.0 * n;
  f.attention = 12.0 * L * T * C;
  // Recomputing the blocks runs their forward once more: the forward third of their share of
  // 6N (2 per parameter; a block has 12 C^2 + 13 C) and of the attention term (4 T C).
  if (m.recomputes_blocks()) f.recompute += L * (2.0 * (12.0 * C * C + 13.0 * C) + 4.0 * T * C);
  f.recompute += attention.recomputed_flops_per_token(m);
  f.padding = 6.0 * C * (Vp - V);
  return f;
}

StepFlops step_flops(const ModelConfig& model, const AttentionKernels& attention,
                     double global_tokens, int64_t ranks) {
  const FlopsPerToken f = flops_per_token(model, attention);
  StepFlops s;
  s.model = f.model() * global_tokens;
  s.hardware = f.hardware() * global_tokens;
  s.ranks = ranks < 1 ? 1 : ranks;
  return s;
}

}  // namespace zm
