#include "modules/evaluation/settings.hpp"

#include <limits>

#include "core/error.hpp"

namespace zm {

namespace {
const char* const kModule = "evaluation";
}  // namespace

std::vector<KeySpec> evaluation_keys() {
  const double largest = std::numeric_limits<double>::max();
  KeySpec val_source = deck_keys::string(
      kModule, "data", "val_source", "", true,
      "the held-out split train.eval_every reads: a token shard; \"\" = the last "
      "data.val_fraction of data.source's tokens (never trained on), or with synthetic data "
      "sequences of the chain training never draws");
  return {
      deck_keys::integer(kModule, "train", "eval_every", 0, 0, 1000000000,
                         "steps between evaluations of the loss on the held-out split (and after "
                         "the last step); 0 = none"),
      deck_keys::integer(kModule, "train", "eval_batches", 4, 1, 1048576,
                         "micro-batches per data-parallel rank in one evaluation (forward only; "
                         "the same held-out sequences every time)"),
      deck_keys::number(kModule, "train", "target_loss", 0, 0, false, largest, false,
                        "time to target: the first evaluation at or below this validation loss "
                        "gives the steps, tokens and seconds to reach it; 0 = no target"),
      val_source,
      deck_keys::number(kModule, "data", "val_fraction", 0.1, 0, true, 1, true,
                        "with evaluation on a token shard and no data.val_source: the fraction "
                        "of its tokens, at its end, held out of training"),
  };
}

EvaluationSettings evaluation_settings(const Deck& deck) {
  EvaluationSettings s;
  s.every = deck.value<int64_t>("train.eval_every");
  s.batches = deck.value<int64_t>("train.eval_batches");
  s.target_loss = deck.value<double>("train.target_loss");
  s.val_source = deck.value<std::string>("data.val_source");
  s.val_fraction = deck.value<double>("data.val_fraction");
  return s;
}

bool holds_out_tail(const Deck& deck) {
  const EvaluationSettings s = evaluation_settings(deck);
  return s.evaluates() && s.val_source.empty() && deck.data.source != "synthetic";
}

// A target is reached at an evaluation: without evaluations it could never be.
void check_evaluation(const Deck& deck) {
  const EvaluationSettings s = evaluation_settings(deck);
  if (s.targets() && !s.evaluates())
    fail(
        "{}: train.target_loss = {} needs evaluations to reach it: train.eval_every = 0. "
        "Expected train.eval_every > 0 (steps between evaluations on the held-out split)",
        deck.where("train.target_loss"), s.target_loss);
  if (!s.val_source.empty() && s.val_source == deck.data.source)
    fail(
        "{}: data.val_source = \"{}\" is data.source itself: evaluation would read tokens that "
        "training reads. Expected another token shard, or \"\" to hold out the tail of "
        "data.source (data.val_fraction)",
        deck.where("data.val_source"), s.val_source);
}

}  // namespace zm
