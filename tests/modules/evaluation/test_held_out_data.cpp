// The held-out split and the data's loss floor, without training (modules/evaluation/held_out.hpp).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/token_shard_writer.hpp"
#include "core/deck.hpp"
#include "core/error.hpp"
#include "core/validate.hpp"
#include "modules/evaluation/held_out.hpp"
#include "plan/run_extensions.hpp"
#include "train/data.hpp"

namespace {

std::string temp_file(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("zeromini-held-out-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

std::string error_of(const zm::Deck& deck, int64_t ranks) {
  try {
    zm::check_data(deck);
    zm::check_held_out(deck, ranks);
  } catch (const zm::Error& e) {
    return e.what();
  }
  return "";
}

// The chain's floor is what a model that knows the chain reaches: the entropy of the next token
// given the one before, over the positions of a sequence. Here it is estimated from the
// transitions of many sequences of the chain (the frequency of each successor of each token),
// independently of how chain_loss_floor() computes it.
TEST(LossFloor, EqualsTheChainsConditionalEntropyMeasuredFromItsSequences) {
  for (const char* vocab : {"5", "16", "97"}) {
    SCOPED_TRACE(std::string("vocab ") + vocab);
    const zm::Deck deck = zm::parse_deck(
        std::string("[model]\nvocab = ") + vocab + "\nseq_len = 8\n[train]\nseed = 7\n", "d");
    const auto data = zm::make_data_source(deck);
    const double floor = zm::chain_loss_floor(zm::markov_chain(deck), 8);
    ASSERT_TRUE(std::isfinite(floor));
    EXPECT_GT(floor, 0.0);
    EXPECT_LE(floor, std::log(4.0) + 1e-12);  // four successors, some of which coincide
    const int64_t T = 8, sequences = 40000;
    std::vector<int> inputs(static_cast<size_t>(sequences * T)), targets(inputs.size());
    data->sequences(0, sequences, inputs.data(), targets.data());
    std::map<int, std::map<int, double>> counts;
    for (size_t i = 0; i < inputs.size(); ++i) counts[inputs[i]][targets[i]] += 1;
    double entropy = 0;
    for (const auto& [token, next] : counts) {
      double n = 0;
      for (const auto& [successor, count] : next) n += count;
      for (const auto& [successor, count] : next)
        entropy -= count / static_cast<double>(inputs.size()) * std::log(count / n);
    }
    // 320,000 transitions: the estimate's spread is a few 1e-3.
    EXPECT_NEAR(entropy, floor, 0.01);
  }
}

TEST(LossFloor, UnknownForATokenShard) {
  if (!zm::testing::reads_data_files()) GTEST_SKIP() << "this build reads no data files";
  const std::string shard = temp_file("floor.bin");
  zm::testing::write_token_shard(shard, std::vector<uint16_t>(200, 3));
  const zm::Deck deck = zm::parse_deck(
      "[model]\nvocab = 11\nseq_len = 4\n[train]\neval_every = 1\n[data]\nsource = \"" + shard +
          "\"\n",
      "d");
  EXPECT_TRUE(std::isnan(zm::held_out_split(deck).loss_floor));
  std::filesystem::remove(shard);
}

// Synthetic data: the held-out sequences are none of those training reads.
TEST(HeldOut, SyntheticValidationSequencesAreNotTrainingSequences) {
  const zm::Deck deck =
      zm::parse_deck("[model]\nvocab = 97\nseq_len = 16\n[train]\neval_every = 1\n", "d");
  const auto train = zm::make_data_source(deck);
  const auto held_out = zm::held_out_split(deck).data;
  ASSERT_NE(held_out, nullptr);
  const int64_t T = 16, B = 64;
  std::vector<int> a(B * T), at(B * T), b(B * T), bt(B * T);
  train->sequences(0, B, a.data(), at.data());
  held_out->sequences(0, B, b.data(), bt.data());
  EXPECT_NE(a, b);
}

// A shard's tail is held out: training reads only tokens before it, evaluation only tokens in it.
TEST(HeldOut, ShardTailIsReadOnlyByEvaluation) {
  if (!zm::testing::reads_data_files()) GTEST_SKIP() << "this build reads no data files";
  const std::string shard = temp_file("tail.bin");
  std::vector<uint16_t> tokens(1000);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<uint16_t>(i < 900 ? 1 : 2);
  zm::testing::write_token_shard(shard, tokens);
  const zm::Deck deck = zm::parse_deck(
      "[model]\nvocab = 11\nseq_len = 10\n[train]\neval_every = "
      "5\n[data]\nval_fraction = 0.1\nsource = \"" +
          shard + "\"\n",
      "d");
  const int64_t T = 10, B = 500;  // more than either split holds: sequences wrap around
  std::vector<int> inputs(B * T), targets(B * T);
  // Training leaves the tail to evaluation (the module's part of the run's extensions).
  const double reserved = zm::run_extensions(deck, 0).reserved_data_tail;
  EXPECT_EQ(reserved, 0.1);
  zm::make_data_source(deck, reserved)->sequences(0, B, inputs.data(), targets.data());
  for (size_t i = 0; i < inputs.size(); ++i) {
    ASSERT_EQ(inputs[i], 1) << i;
    ASSERT_EQ(targets[i], 1) << i;
  }
  const auto held_out = zm::held_out_split(deck).data;
  EXPECT_EQ(held_out->distinct_sequences(), 9);  // (100 - 1) / 10
  held_out->sequences(0, B, inputs.data(), targets.data());
  for (size_t i = 0; i < inputs.size(); ++i) {
    ASSERT_EQ(inputs[i], 2) << i;
    ASSERT_EQ(targets[i], 2) << i;
  }
  // Without evaluation training reads the whole shard.
  const zm::Deck no_eval = zm::parse_deck(
      "[model]\nvocab = 11\nseq_len = 10\n[data]\nval_fraction = 0.1\nsource = \"" + shard + "\"\n",
      "d");
  EXPECT_EQ(zm::run_extensions(no_eval, 0).reserved_data_tail, 0.0);
  zm::make_data_source(no_eval, zm::run_extensions(no_eval, 0).reserved_data_tail)
      ->sequences(0, B, inputs.data(), targets.data());
  EXPECT_NE(std::find(targets.begin(), targets.end(), 2), targets.end());
  std::filesystem::remove(shard);
}

TEST(HeldOut, SplitsTooSmallAreRefusedNamingTheKeys) {
  if (!zm::testing::reads_data_files()) GTEST_SKIP() << "this build reads no data files";
  const std::string shard = temp_file("small.bin");
  zm::testing::write_token_shard(shard, std::vector<uint16_t>(1000, 1));
  const std::string base =
      "[model]\nvocab = 11\nseq_len = 10\n[data]\nsource = \"" + shard + "\"\n";
  // 9 held-out sequences: 2 ranks x micro_batch 2 x 2 batches = 8 fit, 3 batches do not.
  zm::Deck deck = zm::parse_deck(
      base, "d.toml", {"train.eval_every=1", "train.micro_batch=2", "train.eval_batches=2"});
  EXPECT_EQ(error_of(deck, 2), "");
  deck = zm::parse_deck(base, "d.toml",
                        {"train.eval_every=1", "train.micro_batch=2", "train.eval_batches=3"});
  const std::string too_many = error_of(deck, 2);
  EXPECT_NE(too_many.find("--set train.eval_batches=3"), std::string::npos) << too_many;
  EXPECT_NE(too_many.find("= 12 sequences of 10 tokens"), std::string::npos) << too_many;
  EXPECT_NE(too_many.find("holds 9"), std::string::npos) << too_many;
  // A held-out tail shorter than a sequence.
  deck = zm::parse_deck(base, "d.toml", {"train.eval_every=1", "data.val_fraction=0.005"});
  const std::string tiny = error_of(deck, 1);
  EXPECT_NE(tiny.find("data.val_fraction = 0.005 holds out 5 of the 1000 tokens"),
            std::string::npos)
      << tiny;
  // A validation shard that is the training shard.
  deck =
      zm::parse_deck(base, "d.toml", {"train.eval_every=1", "data.val_source=\"" + shard + "\""});
  EXPECT_THROW(zm::validate(deck, {0, 1, 1}), zm::Error);
  std::filesystem::remove(shard);
}

}  // namespace
