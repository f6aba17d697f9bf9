// Shared by the ZeRO tests: the test model and a short training run.
#pragma once

#include <string>
#include <vector>

#include <fmt/format.h>

#include "comm/communicator.hpp"
#include "core/deck.hpp"
#include "train/trainer.hpp"

namespace zm::testing {

// tiny-test.toml's model with the batch and stage given.
inline Deck test_deck(int stage, int64_t micro_batch, int64_t grad_accum = 1,
                      std::vector<std::string> extra = {}) {
  std::vector<std::string> overrides = {fmt::format("zero.stage={}", stage),
                                        fmt::format("train.micro_batch={}", micro_batch),
                                        fmt::format("train.grad_accum={}", grad_accum)};
  for (auto& e : extra) overrides.push_back(e);
  return parse_deck(R"(
[model]
layers = 2
heads = 4
dim = 32
vocab = 97
seq_len = 16
[train]
steps = 5
lr = 1e-2
warmup = 1
seed = 7
[zero]
bucket_mb = 0.01
)",
                    "test-deck", overrides);
}

struct TrainedRun {
  std::vector<double> losses;
  std::vector<float> params;  // full logical vector after the last step
  std::vector<StepRecord> records;
};

inline TrainedRun train(const Deck& deck, Communicator& comm) {
  TrainedRun run;
  const auto owned_trainer = make_trainer(deck, deck.zero.stage, comm);
  Trainer& trainer = *owned_trainer;
  trainer.init_parameters();
  for (int64_t s = 0; s < deck.train.steps; ++s) {
    run.records.push_back(trainer.step(s));
    run.losses.push_back(run.records.back().loss);
  }
  run.params = trainer.engine().full_parameters();
  return run;
}

}  // namespace zm::testing
