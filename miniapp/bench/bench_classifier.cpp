// What the chunked LM head (model.classifier_chunk, here its default) gains over the whole
// logits at once (classifier_chunk = 0, the reference): two trainers of the same model, stepped
// in alternation so that both see the same machine state. Each case reports both mean step
// times, their ratio (chunked / reference: below 1 is faster) and both activation footprints
// from the planner's table. Cases: the model and batch of inputs/quickstart.toml (L=4, C=128,
// NH=4, T=64, B=4, V=512), and the same model at T = 1024 with one and with four sequences per
// micro-batch (one and four chunks of the default 1024 tokens).
#include <benchmark/benchmark.h>

#include <fmt/format.h>

#include "bench_util.hpp"
#include "comm/communicator.hpp"
#include "core/deck.hpp"
#include "core/timer.hpp"
#include "model/gpt.hpp"
#include "train/trainer.hpp"

namespace {

// chunk < 0: the deck's default.
zm::Deck classifier_deck(int64_t seq_len, int64_t micro_batch, int64_t chunk) {
  std::vector<std::string> overrides = {fmt::format("model.seq_len={}", seq_len),
                                        fmt::format("train.micro_batch={}", micro_batch)};
  if (chunk >= 0) overrides.push_back(fmt::format("model.classifier_chunk={}", chunk));
  return zm::parse_deck(
      "[model]\nlayers = 4\nheads = 4\ndim = 128\nvocab = 512\n"
      "[train]\nsteps = 1000000\nlr = 3e-3\n",
      "bench", overrides);
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

void classifier_paths(benchmark::State& state) {
  const int64_t seq_len = state.range(0), micro_batch = state.range(1);
  zm::Communicator& comm = zm::bench::world_communicator();
  const zm::Deck reference_deck = classifier_deck(seq_len, micro_batch, 0);
  const zm::Deck chunked_deck = classifier_deck(seq_len, micro_batch, -1);
  auto reference = zm::make_trainer(reference_deck, 0, comm);
  auto chunked = zm::make_trainer(chunked_deck, 0, comm);
  reference->init_parameters();
  chunked->init_parameters();
  timed_step(*reference, 0);  // warm-up: first touch of every buffer
  timed_step(*chunked, 0);
  int64_t step = 1;
  double reference_s = 0.0, chunked_s = 0.0;
  for (auto _ : state) {
    // Alternate which goes first, so that neither always follows the other.
    const bool chunked_first = step % 2 == 0;
    const double first = timed_step(chunked_first ? *chunked : *reference, step);
    const double second = timed_step(chunked_first ? *reference : *chunked, step);
    reference_s += chunked_first ? second : first;
    chunked_s += chunked_first ? first : second;
    state.SetIterationTime(chunked_first ? first : second);
    ++step;
  }
  const double n = static_cast<double>(step - 1);
  state.counters["classifier_chunk"] = static_cast<double>(chunked_deck.model.classifier_chunk);
  state.counters["step_ms_reference"] = 1e3 * reference_s / n;
  state.counters["step_ms_chunked"] = 1e3 * chunked_s / n;
  state.counters["chunked_over_reference"] = chunked_s / reference_s;
  state.counters["activations_MiB_reference"] = activation_mib(reference_deck);
  state.counters["activations_MiB_chunked"] = activation_mib(chunked_deck);
}

// Fixed iteration counts keep ranks in step when run under mpiexec.
BENCHMARK(classifier_paths)
    ->Name("ClassifierPaths/quickstart")
    ->Args({64, 4})
    ->Iterations(100)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(classifier_paths)
    ->Name("ClassifierPaths/T1024")
    ->Args({1024, 1})
    ->Iterations(12)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(classifier_paths)
    ->Name("ClassifierPaths/T1024xB4")
    ->Args({1024, 4})
    ->Iterations(6)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
