#include "core/validate.hpp"

#include <vector>

#include "core/error.hpp"
#include "core/stage_spec.hpp"
#include "core/zero_mesh.hpp"

namespace zm {

namespace {

// A target is reached at an evaluation: without evaluations it could never be.
void check_evaluation(const Deck& deck) {
  if (deck.train.target_loss > 0 && !deck.train.evaluates())
    fail(
        "{}: train.target_loss = {} needs evaluations to reach it: train.eval_every = 0. "
        "Expected train.eval_every > 0 (steps between evaluations on the held-out split)",
        deck.where("train.target_loss"), deck.train.target_loss);
  if (!deck.data.val_source.empty() && deck.data.val_source == deck.data.source)
    fail(
        "{}: data.val_source = \"{}\" is data.source itself: evaluation would read tokens that "
        "training reads. Expected another token shard, or \"\" to hold out the tail of "
        "data.source (data.val_fraction)",
        deck.where("data.val_source"), deck.data.val_source);
}

std::vector<RunCheck>& run_checks() {
  static std::vector<RunCheck> checks;
  return checks;
}

}  // namespace

void add_validation(RunCheck check) {
  run_checks().push_back(std::move(check));
}

void validate(const Deck& deck, const RunShape& shape, Validation purpose) {
  // The mesh's own checks: the model dimensions divide the ranks, the shard sizes divide the
  // data-parallel ranks, hpZ and hybrid sharding exclude each other.
  zero_mesh(deck, shape.stage, static_cast<int>(shape.ranks),
            static_cast<int>(shape.ranks_per_node));
  check_evaluation(deck);
  for (const RunCheck& check : run_checks()) check(deck, shape, purpose);
}

}  // namespace zm
