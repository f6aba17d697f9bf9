// A small deck with a [zero] section of the test's, and the refusal validate (core/validate.hpp)
// gives it, for the core's deck checks and the modules' (tests/modules/<name>/test_validate_*).
#pragma once

#include <string>
#include <vector>

#include "core/deck.hpp"
#include "core/error.hpp"
#include "core/validate.hpp"

namespace zm::testing {

inline zm::Deck deck_of(const std::string& zero_section,
                        const std::vector<std::string>& sets = {}) {
  return zm::parse_deck(
      "[model]\nlayers = 2\ndim = 64\nheads = 4\nvocab = 256\nseq_len = 32\n[zero]\n" +
          zero_section,
      "deck.toml", sets, zm::BuildChecks::Skip);
}

// The message of the refusal, or "" when the deck passes.
inline std::string refusal(const zm::Deck& deck, zm::RunShape shape,
                           zm::Validation purpose = zm::Validation::Run) {
  try {
    zm::validate(deck, shape, purpose);
  } catch (const zm::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace zm::testing
