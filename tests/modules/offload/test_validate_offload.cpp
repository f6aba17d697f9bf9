// ZeRO-Offload's checks of a deck against the run's stage and ranks (core/validate.hpp's
// add_validation): every refusal names where the key was set and what was expected.
#include <gtest/gtest.h>

#include <string>

#include "common/validate_test_util.hpp"
#include "core/deck_keys.hpp"

namespace {

using zm::testing::deck_of;
using zm::testing::refusal;

// ZeRO-Offload: the optimizer's state at the stages that shard it, the parameter shard at stage
// 3 with the optimizer's, not under hpZ. The run refuses the stage checks, the planner prices
// them where they apply; the combinations of keys are refused by both.
TEST(ValidateOffload, OffloadWhereItApplies) {
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
  if (!zm::module_setting(zm::Deck{}, "zero.secondary_shard_size", "").empty()) {  // zeropp
    const zm::Deck hpz = deck_of(
        "offload_optimizer = \"host\"\noffload_params = \"host\"\nsecondary_shard_size = 2\n");
    EXPECT_NE(refusal(hpz, {3, 4, 4})
                  .find("deck.toml:9:1: zero.offload_params = \"host\" with "
                        "zero.secondary_shard_size (hpZ, deck.toml:10:1)"),
              std::string::npos)
        << refusal(hpz, {3, 4, 4});
    EXPECT_EQ(
        refusal(deck_of("offload_optimizer = \"host\"\nsecondary_shard_size = 2\n"), {3, 4, 4}),
        "");
  }
  // A value the schema does not know is refused as the deck is read.
  try {
    deck_of("offload_optimizer = \"cpu\"\n");
    ADD_FAILURE() << "\"cpu\" accepted";
  } catch (const zm::Error& e) {
    EXPECT_NE(std::string(e.what()).find("zero.offload_optimizer"), std::string::npos) << e.what();
  }
}

}  // namespace
