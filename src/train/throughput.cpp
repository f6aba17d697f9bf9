#include "train/throughput.hpp"

#include "model/flops.hpp"

namespace zm {

Throughput measure_throughput(const StageResult& s, const ModelConfig& model,
                              const AttentionKernels& attention) {
  Throughput t;
  const size_t first = s.steps.size() >= 2 ? 1 : 0;
  const double timed = static_cast<double>(s.steps.size() - first);
  t.step_seconds = s.mean_times.total;
  const double global_tokens = s.tokens_per_rank_per_step * s.ranks;
  const FlopsPerToken per_token = flops_per_token(model, attention);
  const StepFlops flops = step_flops(model, attention, global_tokens, s.ranks);
  t.model_flops_per_token = per_token.model();
  t.hardware_flops_per_token = per_token.hardware();
  t.model_flops_per_step = flops.model;
  t.hardware_flops_per_step = flops.hardware;
  if (timed > 0 && t.step_seconds > 0) {
    t.tokens_per_second = global_tokens / t.step_seconds;
    t.tflops_per_device = flops.model_per_rank() / t.step_seconds / 1e12;
    t.tflops_total = flops.model / t.step_seconds / 1e12;
    t.hardware_tflops_per_device = flops.hardware_per_rank() / t.step_seconds / 1e12;
  }
  return t;
}

}  // namespace zm
