// What the chunked LM head (model.classifier_chunk, here its default) gains over the whole
// logits at once (classifier_chunk = 0, the reference): two trainers of the same model, stepped
// in alternation so that both see the same machine state. Each case reports both mean step
// times, their ratio (chunked / reference: below 1 is faster) and both activation footprints
// from the planner's table. Cases: the model and batch of inputs/quickstart.toml (L=4, C=128,
// NH=4, T=64, B=4, V=512), and the same model at T = 1024 with one and with four sequences per
// micro-batch (one and four chunks of the default 1024 tokens), and at four sequences with
// GPT-2's padded vocabulary (50304: logits of 824 MB at once, 206 MB per chunk).
#include <benchmark/benchmark.h>

#include <fmt/format.h>

#include "core/deck.hpp"
#include "paired_steps.hpp"

namespace {

// chunk < 0: the deck's default.
zm::Deck classifier_deck(int64_t seq_len, int64_t micro_batch, int64_t vocab, int64_t chunk) {
  if (chunk < 0) return zm::bench::quickstart_model_deck(seq_len, micro_batch, vocab);
  return zm::bench::quickstart_model_deck(seq_len, micro_batch, vocab,
                                          {fmt::format("model.classifier_chunk={}", chunk)});
}

void classifier_paths(benchmark::State& state) {
  const int64_t seq_len = state.range(0), micro_batch = state.range(1), vocab = state.range(2);
  const zm::Deck chunked_deck = classifier_deck(seq_len, micro_batch, vocab, -1);
  zm::bench::compare_in_alternation(state, 0, classifier_deck(seq_len, micro_batch, vocab, 0),
                                    chunked_deck, {"reference", "chunked"});
  state.counters["classifier_chunk"] = static_cast<double>(chunked_deck.model.classifier_chunk);
}

// Fixed iteration counts keep ranks in step when run under mpiexec.
BENCHMARK(classifier_paths)
    ->Name("ClassifierPaths/quickstart")
    ->Args({64, 4, 512})
    ->Iterations(100)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(classifier_paths)
    ->Name("ClassifierPaths/T1024")
    ->Args({1024, 1, 512})
    ->Iterations(12)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(classifier_paths)
    ->Name("ClassifierPaths/T1024xB4")
    ->Args({1024, 4, 512})
    ->Iterations(6)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

BENCHMARK(classifier_paths)
    ->Name("ClassifierPaths/T1024xB4/vocab50304")
    ->Args({1024, 4, 50304})
    ->Iterations(3)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
