// validate (core/validate.hpp): the one check of a deck against the run's stage and ranks, asked
// by run, plan and sweep. Every refusal names where the key was set and what was expected.
#include <gtest/gtest.h>

#include <string>

#include "core/deck.hpp"
#include "core/error.hpp"
#include "core/validate.hpp"

namespace {

zm::Deck deck_of(const std::string& zero_section, const std::vector<std::string>& sets = {}) {
  return zm::parse_deck(
      "[model]\nlayers = 2\ndim = 64\nheads = 4\nvocab = 256\nseq_len = 32\n[zero]\n" +
          zero_section,
      "deck.toml", sets, zm::BuildChecks::Skip);
}

// The message of the refusal, or "" when the deck passes.
std::string refusal(const zm::Deck& deck, zm::RunShape shape,
                    zm::Validation purpose = zm::Validation::Run) {
  try {
    zm::validate(deck, shape, purpose);
  } catch (const zm::Error& e) {
    return e.what();
  }
  return "";
}

TEST(Validate, RefusalsNameTheKeysLine) {
  const zm::Deck shard = deck_of("shard_size = 3\n");
  EXPECT_NE(refusal(shard, {1, 4, 4}).find("deck.toml:8:1: zero.shard_size = 3"),
            std::string::npos);
  EXPECT_EQ(refusal(shard, {0, 4, 4}), "");  // stage 0 shards nothing
  EXPECT_EQ(refusal(shard, {1, 6, 6}), "");
  const zm::Deck tp = deck_of("", {"parallel.tp=2"});
  EXPECT_NE(refusal(tp, {1, 3, 3})
                .find("--set parallel.tp=2: parallel.tp = 2: expected a divisor "
                      "of the rank count 3"),
            std::string::npos);
}

// What no stage can run the planner refuses too.
TEST(Validate, ThePlannerRefusesWhatNoStageRuns) {
  EXPECT_NE(refusal(deck_of("shard_size = 3\n"), {2, 4, 4}, zm::Validation::Plan), "");
}

}  // namespace
