// A run trained with or without an evaluation after each step (train.eval_every), for the tests
// that evaluation changes nothing of training: the module's (test_evaluation.cpp) and those of
// other modules under it (tests/modules/<name>/test_evaluation_<name>.cpp, registered where the
// evaluation module is built).
#pragma once

#include <string>
#include <vector>

#include "common/equivalence.hpp"
#include "common/gathered_state.hpp"
#include "common/zero_test_util.hpp"
#include "modules/evaluation/held_out.hpp"
#include "modules/evaluation/settings.hpp"

namespace zm::testing {

struct EvaluatedRun {
  std::vector<double> losses, eval_losses;
  std::vector<float> params;
};

// Trains the deck's steps, evaluating after each when `evaluate`.
inline EvaluatedRun train(const zm::Deck& deck, zm::Communicator& comm, bool evaluate) {
  EvaluatedRun run;
  const auto trainer = zm::make_trainer(deck, deck.zero.stage, comm);
  trainer->init_parameters();
  const zm::HeldOutSplit held_out = zm::held_out_split(deck);
  const int64_t batches = zm::evaluation_settings(deck).batches;
  for (int64_t s = 0; s < deck.train.steps; ++s) {
    run.losses.push_back(trainer->step(s).loss);
    if (evaluate) run.eval_losses.push_back(trainer->forward_only_loss(*held_out.data, batches));
  }
  run.params =
      zm::testing::whole_model(*trainer, zm::testing::gathered_parameters(trainer->engine()));
  return run;
}

inline zm::Deck deck_at(int stage, int ranks, std::vector<std::string> extra) {
  extra.insert(extra.begin(), {"train.eval_every=1", "train.eval_batches=2"});
  return zm::testing::test_deck(stage, zm::testing::kGlobalBatch / ranks, 1, extra);
}

}  // namespace zm::testing
