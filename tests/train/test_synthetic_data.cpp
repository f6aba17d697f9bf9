// The core's synthetic data (train/data.hpp): the Markov chain's sequences.
#include <gtest/gtest.h>

#include <vector>

#include "core/deck.hpp"
#include "train/data.hpp"

namespace {

TEST(Data, SyntheticBatchesDependOnlyOnTheGlobalSequenceIndex) {
  zm::Deck deck = zm::parse_deck("[model]\nvocab = 50\nseq_len = 8\n", "d");
  auto data = zm::make_data_source(deck);
  const int64_t T = 8;
  // One rank with micro_batch 4 sees what 2 ranks with micro_batch 2 see together.
  std::vector<int> one(4 * T), one_t(4 * T), r0(2 * T), r0_t(2 * T), r1(2 * T), r1_t(2 * T);
  data->sequences(zm::first_sequence(3, 0, 1, 1, 0, 4), 4, one.data(), one_t.data());
  data->sequences(zm::first_sequence(3, 0, 1, 2, 0, 2), 2, r0.data(), r0_t.data());
  data->sequences(zm::first_sequence(3, 0, 1, 2, 1, 2), 2, r1.data(), r1_t.data());
  std::vector<int> both(r0);
  both.insert(both.end(), r1.begin(), r1.end());
  EXPECT_EQ(one, both);
  // Targets are the inputs shifted by one.
  for (int64_t b = 0; b < 4; ++b)
    for (int64_t t = 0; t + 1 < T; ++t) EXPECT_EQ(one_t[b * T + t], one[b * T + t + 1]);
  for (int v : one) {
    EXPECT_GE(v, 0);
    EXPECT_LT(v, 50);
  }
}

}  // namespace
