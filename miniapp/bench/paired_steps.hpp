// Two trainers of the same model that differ in one setting, stepped in alternation so that both
// see the same machine state (ClassifierPaths, RecomputeCost, and modules' benchmarks).
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/deck.hpp"
#include "train/trainer.hpp"

namespace zm::bench {

// The quickstart's model (L=4, C=128, NH=4) at seq_len x micro_batch tokens and `vocab`, with
// further deck overrides: the decks the paired benchmarks compare.
Deck quickstart_model_deck(int64_t seq_len, int64_t micro_batch, int64_t vocab,
                           std::vector<std::string> overrides = {});

// Activation bytes per rank of a deck's model in fp32 at `stage`, from the model's buffer table
// (with the attention kernels the run's options give), in MiB.
double activation_mib(const Deck& deck, int stage);

struct PairedSeconds {
  double baseline = 0, candidate = 0;  // summed step times
  double steps = 0;                    // pairs stepped
};

// After a warm-up step of each (first touch of every buffer), one step of each per iteration,
// which one goes first alternating; the iteration's manual time is the candidate's step.
PairedSeconds step_in_alternation(benchmark::State& state, Trainer& baseline, Trainer& candidate);

// The names of the two settings in the counters, e.g. {"reference", "fused"}.
struct PairNames {
  const char* baseline;
  const char* candidate;
};

// Trainers of both decks at `stage` on the world communicator, stepped in alternation; reports
// step_ms_<name> (mean step), <candidate>_over_<baseline> (their ratio: below 1 the candidate is
// faster) and activations_MiB_<name> for both.
void compare_in_alternation(benchmark::State& state, int stage, const Deck& baseline_deck,
                            const Deck& candidate_deck, PairNames names);

}  // namespace zm::bench
