// What the fused attention kernels (model.attention = "fused") gain over the reference ones
// ("reference", which store the T x T probabilities): two trainers of the same model, stepped in
// alternation so that both see the same machine state. Each case reports both mean step times,
// their ratio (fused / reference: below 1 is faster) and both activation footprints from the
// planner's table. Cases: the model and batch of inputs/quickstart.toml (L=4, C=128, NH=4, T=64,
// B=4, V=512), and the same model at T = 1024 with one sequence per micro-batch.
#include <benchmark/benchmark.h>

#include <fmt/format.h>

#include "bench_util.hpp"
#include "comm/communicator.hpp"
#include "core/deck.hpp"
#include "core/timer.hpp"
#include "model/gpt.hpp"
#include "train/trainer.hpp"

namespace {

zm::Deck attention_deck(int64_t seq_len, int64_t micro_batch, const char* attention) {
  return zm::parse_deck(
      "[model]\nlayers = 4\nheads = 4\ndim = 128\nvocab = 512\n"
      "[train]\nsteps = 1000000\nlr = 3e-3\n",
      "bench",
      {fmt::format("model.seq_len={}", seq_len), fmt::format("train.micro_batch={}", micro_batch),
       fmt::format("model.attention={}", attention)});
}

double activation_mib(const zm::Deck& deck) {
  double bytes = 0;
  for (const zm::BufferSpec& spec :
       zm::gpt_buffers(deck.model, deck.train.micro_batch, deck.model.seq_len, 4))
    if (spec.category == zm::MemCategory::Activations) bytes += static_cast<double>(spec.bytes());
  return bytes / (1024.0 * 1024.0);
}

double timed_step(zm::Trainer& trainer, int64_t step) {
  const double start = zm::wall_seconds();
  trainer.step(step);
  return zm::wall_seconds() - start;
}

void attention_paths(benchmark::State& state) {
  const int64_t seq_len = state.range(0), micro_batch = state.range(1);
  zm::Communicator& comm = zm::bench::world_communicator();
  const zm::Deck reference_deck = attention_deck(seq_len, micro_batch, "reference");
  const zm::Deck fused_deck = attention_deck(seq_len, micro_batch, "fused");
  auto reference = zm::make_trainer(reference_deck, 0, comm);
  auto fused = zm::make_trainer(fused_deck, 0, comm);
  reference->init_parameters();
  fused->init_parameters();
  timed_step(*reference, 0);  // warm-up: first touch of every buffer
  timed_step(*fused, 0);
  int64_t step = 1;
  double reference_s = 0.0, fused_s = 0.0;
  for (auto _ : state) {
    // Alternate which goes first, so that neither always follows the other.
    const bool fused_first = step % 2 == 0;
    const double first = timed_step(fused_first ? *fused : *reference, step);
    const double second = timed_step(fused_first ? *reference : *fused, step);
    reference_s += fused_first ? second : first;
    fused_s += fused_first ? first : second;
    state.SetIterationTime(fused_first ? first : second);
    ++step;
  }
  const double n = static_cast<double>(step - 1);
  state.counters["step_ms_reference"] = 1e3 * reference_s / n;
  state.counters["step_ms_fused"] = 1e3 * fused_s / n;
  state.counters["fused_over_reference"] = fused_s / reference_s;
  state.counters["activations_MiB_reference"] = activation_mib(reference_deck);
  state.counters["activations_MiB_fused"] = activation_mib(fused_deck);
}

// Fixed iteration counts keep ranks in step when run under mpiexec.
BENCHMARK(attention_paths)
    ->Name("AttentionPaths/quickstart")
    ->Args({64, 4})
    ->Iterations(100)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(attention_paths)
    ->Name("AttentionPaths/T1024")
    ->Args({1024, 1})
    ->Iterations(12)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
