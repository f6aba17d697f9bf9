// The settings that decide a run's losses, for references (io/reference_file.hpp): which they
// are, their values in a run, and the check that refuses, before training, a run that a
// reference was not made for, so that a check never compares the losses of two different
// trainings.
#pragma once

#include <string>
#include <vector>

#include "core/deck.hpp"
#include "modules/reference_check/reference_file.hpp"

namespace zm {

// The settings of `deck`, run at `ranks` ranks, that decide its losses, in the order a reference
// lists them, each with a note for the file where its meaning is not plain.
std::vector<ReferenceSetting> loss_settings(const Deck& deck, int ranks);

// Throws zm::Error (bad input) unless `reference` (read from `file`) can judge a run of `deck` at
// `ranks` ranks: the same loss settings (every differing one is named with both values and
// where the run's came from), a fresh start (no train.resume: a resumed run does not train the
// steps before its checkpoint), and losses in the reference for every stage the deck trains.
void check_reference_applies(const Reference& reference, const std::string& file, const Deck& deck,
                             int ranks);

}  // namespace zm
