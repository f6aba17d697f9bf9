// What activation recomputation costs in time: two trainers of the same model, one keeping every
// block's activations (model.recompute = "none") and one recomputing them ("blocks"), step by
// step in alternation so that both see the same machine state. The case reports both mean step
// times, their ratio (blocks / none), and both activation footprints from the planner's table.
// Configuration: the one bench_train.cpp uses (L=4, C=256, T=128, B=8).
#include <benchmark/benchmark.h>

#include <fmt/format.h>

#include "bench_util.hpp"
#include "core/deck.hpp"
#include "paired_steps.hpp"

namespace {

zm::Deck recompute_deck(int stage, const char* mode) {
  return zm::bench::training_bench_deck(
      {fmt::format("zero.stage={}", stage), fmt::format("model.recompute={}", mode)});
}

void recompute_cost(benchmark::State& state) {
  const int stage = static_cast<int>(state.range(0));
  zm::bench::compare_in_alternation(state, stage, recompute_deck(stage, "none"),
                                    recompute_deck(stage, "blocks"), {"none", "blocks"});
}

// Fixed iteration counts keep ranks in step when run under mpiexec.
BENCHMARK(recompute_cost)
    ->Name("RecomputeCost/stage")
    ->DenseRange(0, 3)
    ->Iterations(15)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
