#include "modules/resume_check/resume_changes.hpp"

#include <fmt/format.h>

#include "core/zero_mesh.hpp"

namespace zm {

namespace {

// "key a -> b" for each key whose value differs, joined with ", ".
template <typename T>
void note(std::string& changed, const char* key, const T& then, const T& now) {
  if (then == now) return;
  changed += fmt::format("{}{} {} -> {}", changed.empty() ? "" : ", ", key, then, now);
}

void add(std::vector<std::string>& lines, const char* what, const std::string& changed) {
  if (!changed.empty()) lines.push_back(fmt::format("{} changes: {}", what, changed));
}

}  // namespace

std::vector<std::string> resume_changes(const Deck& written, int64_t written_ranks, const Deck& now,
                                        int64_t ranks) {
  std::vector<std::string> lines;
  const TrainConfig &a = written.train, &b = now.train;
  std::string schedule;
  note(schedule, "train.lr", a.lr, b.lr);
  note(schedule, "train.min_lr_ratio", a.min_lr_ratio, b.min_lr_ratio);
  note(schedule, "train.warmup", a.warmup, b.warmup);
  note(schedule, "train.steps", a.steps, b.steps);
  add(lines, "the learning-rate schedule", schedule);
  std::string batch;
  // The ranks of a model-parallel group read the same sequences: the batch counts data-parallel
  // ranks.
  const int64_t model_then = model_parallel_size(written), model_now = model_parallel_size(now);
  const int64_t dp_then = written_ranks / model_then, dp_now = ranks / model_now;
  const int64_t batch_then = a.micro_batch * a.grad_accum * dp_then,
                batch_now = b.micro_batch * b.grad_accum * dp_now;
  if (batch_then != batch_now) {
    note(batch, "train.micro_batch", a.micro_batch, b.micro_batch);
    note(batch, "train.grad_accum", a.grad_accum, b.grad_accum);
    note(batch, model_then == 1 && model_now == 1 ? "ranks" : "data-parallel ranks", dp_then,
         dp_now);
    batch += fmt::format(" (sequences per step {} -> {})", batch_then, batch_now);
  }
  add(lines, "the global batch", batch);
  std::string data;
  note(data, "data.source", written.data.source, now.data.source);
  note(data, "train.seed", a.seed, b.seed);
  add(lines, "the data order", data);
  std::string optimizer;
  note(optimizer, "train.weight_decay", a.weight_decay, b.weight_decay);
  note(optimizer, "train.grad_clip", a.grad_clip, b.grad_clip);
  note(optimizer, "train.beta1", a.beta1, b.beta1);
  note(optimizer, "train.beta2", a.beta2, b.beta2);
  note(optimizer, "train.eps", a.eps, b.eps);
  add(lines, "the optimizer", optimizer);
  return lines;
}

}  // namespace zm
