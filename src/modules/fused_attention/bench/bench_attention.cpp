// What the fused attention kernels (model.attention = "fused") gain over the reference ones
// ("reference", which store the T x T probabilities): two trainers of the same model, stepped in
// alternation so that both see the same machine state. Each case reports both mean step times,
// their ratio (fused / reference: below 1 is faster) and both activation footprints from the
// planner's table. Cases: the model and batch of inputs/quickstart.toml (L=4, C=128, NH=4, T=64,
// B=4, V=512), and the same model at T = 1024 with one sequence per micro-batch.
#include <benchmark/benchmark.h>

#include <fmt/format.h>

#include "core/deck.hpp"
#include "paired_steps.hpp"

namespace {

zm::Deck attention_deck(int64_t seq_len, int64_t micro_batch, const char* attention) {
  return zm::bench::quickstart_model_deck(seq_len, micro_batch, 512,
                                          {fmt::format("model.attention={}", attention)});
}

void attention_paths(benchmark::State& state) {
  const int64_t seq_len = state.range(0), micro_batch = state.range(1);
  zm::bench::compare_in_alternation(state, 0, attention_deck(seq_len, micro_batch, "reference"),
                                    attention_deck(seq_len, micro_batch, "fused"),
                                    {"reference", "fused"});
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
