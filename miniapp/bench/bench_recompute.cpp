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
#include "model/gpt.hpp"
#include "paired_steps.hpp"
#include "train/trainer.hpp"

namespace {

zm::Deck recompute_deck(int stage, const char* mode) {
  return zm::bench::training_bench_deck(
      {fmt::format("zero.stage={}", stage), fmt::format("model.recompute={}", mode)});
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
  const zm::bench::PairedSeconds t = zm::bench::step_in_alternation(state, *kept, *recomputed);
  state.counters["step_ms_none"] = 1e3 * t.baseline / t.steps;
  state.counters["step_ms_blocks"] = 1e3 * t.candidate / t.steps;
  state.counters["blocks_over_none"] = t.candidate / t.baseline;
  state.counters["activations_MiB_none"] = zm::bench::activation_mib(kept_deck);
  state.counters["activations_MiB_blocks"] = zm::bench::activation_mib(recomputed_deck);
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
