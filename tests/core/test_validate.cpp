// validate (core/validate.hpp): the one check of a deck against the run's stage and ranks, asked
// by run, plan and sweep. Every refusal names where the key was set and what was expected.
#include <gtest/gtest.h>

#include <string>

#include "common/validate_test_util.hpp"

namespace {

using zm::testing::deck_of;
using zm::testing::refusal;

TEST(Validate, RefusalsNameTheKeysLine) {
  const zm::Deck shard = deck_of("shard_size = 3\n");
  EXPECT_NE(refusal(shard, {1, 4, 4}).find("deck.toml:8:1: zero.shard_size = 3"),
            std::string::npos);
  EXPECT_EQ(refusal(shard, {0, 4, 4}), "");  // stage 0 shards nothing
  EXPECT_EQ(refusal(shard, {1, 6, 6}), "");
}

// What no stage can run the planner refuses too.
TEST(Validate, ThePlannerRefusesWhatNoStageRuns) {
  EXPECT_NE(refusal(deck_of("shard_size = 3\n"), {2, 4, 4}, zm::Validation::Plan), "");
}

}  // namespace
