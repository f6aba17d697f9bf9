#include "paired_steps.hpp"

#include <fmt/format.h>

#include "bench_util.hpp"

#include "core/timer.hpp"
#include "model/gpt.hpp"
#include "plan/run_extensions.hpp"

namespace zm::bench {

namespace {

double timed_step(Trainer& trainer, int64_t step) {
  const double start = wall_seconds();
  trainer.step(step);
  return wall_seconds() - start;
}

}  // namespace

Deck quickstart_model_deck(int64_t seq_len, int64_t micro_batch, int64_t vocab,
                           std::vector<std::string> overrides) {
  overrides.push_back(fmt::format("model.seq_len={}", seq_len));
  overrides.push_back(fmt::format("train.micro_batch={}", micro_batch));
  overrides.push_back(fmt::format("model.vocab={}", vocab));
  return parse_deck(
      "[model]\nlayers = 4\nheads = 4\ndim = 128\n"
      "[train]\nsteps = 1000000\nlr = 3e-3\n",
      "bench", overrides);
}

double activation_mib(const Deck& deck, int stage) {
  double bytes = 0;
  const AttentionKernels& attention = attention_kernels(run_extensions(deck, stage));
  for (const BufferSpec& spec : gpt_buffers(ParamLayout(deck.model), attention,
                                            deck.train.micro_batch, deck.model.seq_len, 4))
    if (spec.category == MemCategory::Activations) bytes += static_cast<double>(spec.bytes());
  return bytes / (1024.0 * 1024.0);
}

PairedSeconds step_in_alternation(benchmark::State& state, Trainer& baseline, Trainer& candidate) {
  timed_step(baseline, 0);
  timed_step(candidate, 0);
  PairedSeconds sums;
  int64_t step = 1;
  for (auto _ : state) {
    // Alternate which goes first, so that neither always follows the other.
    const bool candidate_first = step % 2 == 0;
    const double first = timed_step(candidate_first ? candidate : baseline, step);
    const double second = timed_step(candidate_first ? baseline : candidate, step);
    sums.baseline += candidate_first ? second : first;
    sums.candidate += candidate_first ? first : second;
    state.SetIterationTime(candidate_first ? first : second);
    ++step;
  }
  sums.steps = static_cast<double>(step - 1);
  return sums;
}

void compare_in_alternation(benchmark::State& state, int stage, const Deck& baseline_deck,
                            const Deck& candidate_deck, PairNames names) {
  Communicator& comm = world_communicator();
  auto baseline = make_trainer(baseline_deck, stage, comm);
  auto candidate = make_trainer(candidate_deck, stage, comm);
  baseline->init_parameters();
  candidate->init_parameters();
  const PairedSeconds t = step_in_alternation(state, *baseline, *candidate);
  state.counters[fmt::format("step_ms_{}", names.baseline)] = 1e3 * t.baseline / t.steps;
  state.counters[fmt::format("step_ms_{}", names.candidate)] = 1e3 * t.candidate / t.steps;
  state.counters[fmt::format("{}_over_{}", names.candidate, names.baseline)] =
      t.candidate / t.baseline;
  state.counters[fmt::format("activations_MiB_{}", names.baseline)] =
      activation_mib(baseline_deck, stage);
  state.counters[fmt::format("activations_MiB_{}", names.candidate)] =
      activation_mib(candidate_deck, stage);
}

}  // namespace zm::bench
