// What the two memory-saving paths gain together over the paths they replaced: the fused
// attention with the chunked LM head (both defaults) against the reference attention, which
// stores the T x T probabilities, with the whole B x T x V logits at once (model.attention =
// "reference", model.classifier_chunk = 0). Two trainers of the same model, stepped in
// alternation so that both see the same machine state; each case reports both mean step times,
// their ratio (new / old: below 1 is faster) and both activation footprints from the planner's
// table. Cases: the model and batch of inputs/quickstart.toml (L=4, C=128, NH=4, T=64, B=4,
// V=512); the same model at T = 1024 with one sequence per micro-batch; and at T = 1024 with four
// sequences and GPT-2's padded vocabulary (50304), where the logits are 824 MB (four chunks).
#include <benchmark/benchmark.h>

#include "core/deck.hpp"
#include "paired_steps.hpp"

namespace {

zm::Deck paths_deck(int64_t seq_len, int64_t micro_batch, int64_t vocab, bool old_paths) {
  if (!old_paths) return zm::bench::quickstart_model_deck(seq_len, micro_batch, vocab);
  return zm::bench::quickstart_model_deck(
      seq_len, micro_batch, vocab, {"model.attention=reference", "model.classifier_chunk=0"});
}

void new_paths(benchmark::State& state) {
  const int64_t seq_len = state.range(0), micro_batch = state.range(1), vocab = state.range(2);
  zm::bench::compare_in_alternation(state, 0, paths_deck(seq_len, micro_batch, vocab, true),
                                    paths_deck(seq_len, micro_batch, vocab, false), {"old", "new"});
}

// Fixed iteration counts keep ranks in step when run under mpiexec.
BENCHMARK(new_paths)
    ->Name("NewPaths/quickstart")
    ->Args({64, 4, 512})
    ->Iterations(100)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(new_paths)
    ->Name("NewPaths/T1024")
    ->Args({1024, 1, 512})
    ->Iterations(12)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(new_paths)
    ->Name("NewPaths/T1024xB4/vocab50304")
    ->Args({1024, 4, 50304})
    ->Iterations(3)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
