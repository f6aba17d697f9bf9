// A whole training step (forward, backward, AdamW) of one rank, at the configuration the
// PyTorch comparison uses (scripts/bench-vs-torch.sh): L=4, C=256, NH=4, T=128, B=8, V=512.
// Under mpiexec the step also runs the stage's collectives; the comparison runs one rank.
#include <benchmark/benchmark.h>

#include <fmt/format.h>

#include <memory>

#include "bench_util.hpp"
#include "comm/communicator.hpp"
#include "core/deck.hpp"
#include "train/trainer.hpp"

namespace {

void train_step(benchmark::State& state) {
  const int stage = static_cast<int>(state.range(0));
  const zm::Deck deck = zm::bench::training_bench_deck({fmt::format("zero.stage={}", stage)});
  auto trainer = zm::make_trainer(deck, stage, zm::bench::world_communicator());
  trainer->init_parameters();
  trainer->step(0);  // warm-up: first touch of every buffer
  int64_t step = 1;
  for (auto _ : state) trainer->step(step++);
  const double tokens = static_cast<double>(trainer->tokens_per_rank_per_step());
  state.counters["tokens_per_second"] = benchmark::Counter(
      tokens * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  trainer.reset();
}

// Fixed iteration counts keep ranks in step when run under mpiexec.
BENCHMARK(train_step)
    ->Name("TrainStep/stage")
    ->DenseRange(0, 3)
    ->Iterations(20)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
