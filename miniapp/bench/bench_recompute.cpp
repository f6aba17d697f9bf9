// What activation recomputation costs in time: two trainers of the same model, one keeping every
// block's activations (model.recompute = "none") and one recomputing them ("blocks"), step by
// step in alternation so that both see the same machine state. The case reports both mean step
// times, their ratio (blocks / none), and both activation footprints from the planner's table.
// Configuration: the one bench_train.cpp uses (L=4, C=256, T=128, B=8).
#include <benchmark/benchmark.h>

#include <fmt/format.h>

#include <memory>

#include "bench_util.hpp"
#include "comm/communicator.hpp"
#include "core/deck.hpp"
#include "core/timer.hpp"
#include "model/gpt.hpp"
#include "train/trainer.hpp"

namespace {

zm::Deck recompute_deck(int stage, const char* mode) {
  return zm::bench::training_bench_deck(
      {fmt::format("zero.stage={}", stage), fmt::format("model.recompute={}", mode)});
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

void recompute_cost(benchmark::State& state) {
  const int stage = static_cast<int>(state.range(0));
  zm::Communicator& comm = zm::bench::world_communicator();
  const zm::Deck kept_deck = recompute_deck(stage, "none");
  const zm::Deck recomputed_deck = recompute_deck(stage, "blocks");
  auto kept = zm::make_trainer(kept_deck, stage, comm);
  auto recomputed = zm::make_trainer(recomputed_deck, stage, comm);
  kept->init_parameters();
  recomputed->init_parameters();
  timed_step(*kept, 0);  // warm-up: first touch of every buffer
  timed_step(*recomputed, 0);
  int64_t step = 1;
  double none = 0.0, blocks = 0.0;
  for (auto _ : state) {
    // Alternate which goes first, so that neither always follows the other.
    const bool blocks_first = step % 2 == 0;
    const double first = timed_step(blocks_first ? *recomputed : *kept, step);
    const double second = timed_step(blocks_first ? *kept : *recomputed, step);
    none += blocks_first ? second : first;
    blocks += blocks_first ? first : second;
    state.SetIterationTime(blocks_first ? first : second);
    ++step;
  }
  const double n = static_cast<double>(step - 1);
  state.counters["step_ms_none"] = 1e3 * none / n;
  state.counters["step_ms_blocks"] = 1e3 * blocks / n;
  state.counters["blocks_over_none"] = blocks / none;
  state.counters["activations_MiB_none"] = activation_mib(kept_deck);
  state.counters["activations_MiB_blocks"] = activation_mib(recomputed_deck);
  kept.reset();
  recomputed.reset();
}

// Fixed iteration counts keep ranks in step when run under mpiexec.
BENCHMARK(recompute_cost)
    ->Name("RecomputeCost/stage")
    ->DenseRange(0, 3)
    ->Iterations(15)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
