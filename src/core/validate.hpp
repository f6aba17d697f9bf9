// The checks of a deck against the run it describes (its stage and ranks), which `zeromini run`,
// `plan` and `sweep` all ask for every stage and rank count: a failure (zm::Error) names where
// the key was set and what was expected. Single keys are checked as read, and the deck's own
// consistency as it is loaded (core/deck.cpp).
#pragma once

#include <cstdint>
#include <functional>

#include "core/deck.hpp"

namespace zm {

// What a run of the deck is asked to be.
struct RunShape {
  int stage;               // one stage (zero.stage = "all": each of 0-3 in turn)
  int64_t ranks;           // every rank
  int64_t ranks_per_node;  // the ranks that share a node (zero.ranks_per_node wins when set)
};

enum class Validation {
  Run,   // everything a run refuses
  Plan,  // the planner prices a setting only at the stages it applies to, so it does not refuse
         // one set for another stage (`zeromini plan` says so in its header)
};

void validate(const Deck& deck, const RunShape& shape, Validation purpose = Validation::Run);

// A module's checks of the deck against the run's shape, made by validate() after the core's.
using RunCheck = std::function<void(const Deck&, const RunShape&, Validation)>;
void add_validation(RunCheck check);

}  // namespace zm
