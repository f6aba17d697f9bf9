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
  const zm::Deck qwz = deck_of("quantize_weights = \"int8\"\n");
  EXPECT_EQ(refusal(qwz, {3, 4, 4}), "");
  EXPECT_NE(refusal(qwz, {2, 4, 4})
                .find("deck.toml:8:1: zero.quantize_weights = \"int8\" needs "
                      "zero.stage = 3"),
            std::string::npos)
      << refusal(qwz, {2, 4, 4});
  const zm::Deck qgz = deck_of("quantize_grads = \"int4\"\nquantize_block = 7\n");
  EXPECT_NE(refusal(qgz, {0, 4, 4})
                .find("deck.toml:8:1: zero.quantize_grads = \"int4\" needs "
                      "zero.stage 1-3"),
            std::string::npos);
  EXPECT_NE(refusal(qgz, {1, 4, 4})
                .find("deck.toml:9:1: zero.quantize_block = 7 with "
                      "zero.quantize_grads = \"int4\": expected an even block"),
            std::string::npos);
  const zm::Deck shard = deck_of("shard_size = 3\n");
  EXPECT_NE(refusal(shard, {1, 4, 4}).find("deck.toml:8:1: zero.shard_size = 3"),
            std::string::npos);
  EXPECT_EQ(refusal(shard, {0, 4, 4}), "");  // stage 0 shards nothing
  EXPECT_EQ(refusal(shard, {1, 6, 6}), "");
}

// The planner prices qwZ and qgZ at the stages that use them and the others without: it refuses
// neither at those stages, but what no stage can run it refuses too.
TEST(Validate, ThePlannerPricesWhatAStageDoesNotUse) {
  const zm::Deck qwz = deck_of("quantize_weights = \"int8\"\nquantize_grads = \"int8\"\n");
  EXPECT_EQ(refusal(qwz, {0, 4, 4}, zm::Validation::Plan), "");
  EXPECT_NE(refusal(qwz, {0, 4, 4}, zm::Validation::Run), "");
  const zm::Deck odd = deck_of("quantize_grads = \"int4\"\nquantize_block = 7\n");
  EXPECT_NE(refusal(odd, {3, 4, 4}, zm::Validation::Plan), "");
  EXPECT_NE(refusal(deck_of("shard_size = 3\n"), {2, 4, 4}, zm::Validation::Plan), "");
}

}  // namespace

// ZeRO-Offload: the optimizer's state at the stages that shard it, the parameter shard at stage
// 3 with the optimizer's, not under hpZ. The run refuses the stage checks, the planner prices
// them where they apply; the combinations of keys are refused by both.
namespace {

TEST(Validate, OffloadWhereItApplies) {
  const zm::Deck optimizer = deck_of("offload_optimizer = \"host\"\n");
  for (int stage = 1; stage <= 3; ++stage) EXPECT_EQ(refusal(optimizer, {stage, 4, 4}), "");
  EXPECT_NE(refusal(optimizer, {0, 4, 4})
                .find("deck.toml:8:1: zero.offload_optimizer = \"host\" needs zero.stage 1-3"),
            std::string::npos)
      << refusal(optimizer, {0, 4, 4});
  EXPECT_EQ(refusal(optimizer, {0, 4, 4}, zm::Validation::Plan), "");

  const zm::Deck both = deck_of("offload_optimizer = \"host\"\noffload_params = \"host\"\n");
  EXPECT_EQ(refusal(both, {3, 4, 4}), "");
  EXPECT_NE(refusal(both, {2, 4, 4})
                .find("deck.toml:9:1: zero.offload_params = \"host\" needs zero.stage = 3"),
            std::string::npos)
      << refusal(both, {2, 4, 4});
  EXPECT_EQ(refusal(both, {2, 4, 4}, zm::Validation::Plan), "");

  // Refused whatever the stage and purpose.
  const zm::Deck params_alone = deck_of("offload_params = \"host\"\n");
  for (auto purpose : {zm::Validation::Run, zm::Validation::Plan})
    EXPECT_NE(refusal(params_alone, {3, 4, 4}, purpose)
                  .find("deck.toml:8:1: zero.offload_params = \"host\" needs "
                        "zero.offload_optimizer = \"host\""),
              std::string::npos)
        << refusal(params_alone, {3, 4, 4}, purpose);
  const zm::Deck hpz = deck_of(
      "offload_optimizer = \"host\"\noffload_params = \"host\"\nsecondary_shard_size = 2\n");
  EXPECT_NE(refusal(hpz, {3, 4, 4})
                .find("deck.toml:9:1: zero.offload_params = \"host\" with "
                      "zero.secondary_shard_size (hpZ, deck.toml:10:1)"),
            std::string::npos)
      << refusal(hpz, {3, 4, 4});
  EXPECT_EQ(refusal(deck_of("offload_optimizer = \"host\"\nsecondary_shard_size = 2\n"), {3, 4, 4}),
            "");
  // A value the schema does not know is refused as the deck is read.
  try {
    deck_of("offload_optimizer = \"cpu\"\n");
    ADD_FAILURE() << "\"cpu\" accepted";
  } catch (const zm::Error& e) {
    EXPECT_NE(std::string(e.what()).find("zero.offload_optimizer"), std::string::npos) << e.what();
  }
}

}  // namespace
