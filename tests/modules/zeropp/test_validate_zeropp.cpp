// ZeRO++'s checks of a deck against the run's stage and ranks (core/validate.hpp's add_validation):
// every refusal names where the key was set and what was expected.
#include <gtest/gtest.h>

#include <string>

#include "common/validate_test_util.hpp"

namespace {

using zm::testing::deck_of;
using zm::testing::refusal;

TEST(ValidateZeropp, RefusalsNameTheKeysLine) {
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
}

// The planner prices qwZ and qgZ at the stages that use them and the others without: it refuses
// neither at those stages, but what no stage can run it refuses too.
TEST(ValidateZeropp, ThePlannerPricesWhatAStageDoesNotUse) {
  const zm::Deck qwz = deck_of("quantize_weights = \"int8\"\nquantize_grads = \"int8\"\n");
  EXPECT_EQ(refusal(qwz, {0, 4, 4}, zm::Validation::Plan), "");
  EXPECT_NE(refusal(qwz, {0, 4, 4}, zm::Validation::Run), "");
  const zm::Deck odd = deck_of("quantize_grads = \"int4\"\nquantize_block = 7\n");
  EXPECT_NE(refusal(odd, {3, 4, 4}, zm::Validation::Plan), "");
}

}  // namespace
