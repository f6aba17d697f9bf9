// qgZ (zero.quantize_grads, stages 1-3): the gradient reduce-scatter as quantized all-to-alls.
//   - "none" is the unquantized run bit for bit, whatever zero.error_feedback and
//     zero.grad_rounding say (they act on quantized gradients only), and stays bitwise
//     equal to the other stages that reduce alike (stage 2 and 3, test_zero_equivalence);
//   - "int8" tracks the uncompressed loss within 1% at every step of the test deck, and "int4"
//     within 3% (the targets), at stages 1-3, alone, in shard groups and under hpZ, with
//     and without error feedback; the ranks keep one model; the loss falls;
//   - a quantized run repeats bit for bit, stochastic rounding included (keyed by train.seed);
//   - stage 0 and odd int4 blocks are refused, naming the key.
#include <gtest/gtest.h>

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "common/equivalence.hpp"
#include "common/test_watchdog.hpp"

namespace {

using zm::testing::kGlobalBatch;
using zm::testing::largest_difference_from_rank0;
using zm::testing::with;

using zm::testing::kInt4LossTolerance;
using zm::testing::kInt8LossTolerance;

// One group; shard groups of 2, and hpZ groups of 2 at stage 3, where N makes two or more.
std::vector<std::vector<std::string>> shardings(int N, int stage) {
  std::vector<std::vector<std::string>> out = {{}};
  if (N >= 4 && N % 2 == 0) {
    out.push_back({"zero.shard_size=2"});
    if (stage == 3) out.push_back({"zero.secondary_shard_size=2"});
  }
  return out;
}

TEST(QuantizedGrads, NoneIsBitwiseTheUnquantizedRun) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  if (kGlobalBatch % N != 0) GTEST_SKIP() << "global batch not divisible by " << N;
  for (int stage = 1; stage <= 3; ++stage)
    for (const auto& sharding : shardings(N, stage))
      for (const int64_t grad_accum : {1, 2}) {
        SCOPED_TRACE(fmt::format("stage {}, {} ranks, {}, grad_accum {}", stage, N,
                                 fmt::join(sharding, " "), grad_accum));
        const auto plain = zm::testing::train(
            zm::testing::test_deck(stage, kGlobalBatch / N, grad_accum, sharding), *comm);
        const auto none = zm::testing::train(
            zm::testing::test_deck(
                stage, kGlobalBatch / N, grad_accum,
                with(sharding, {"zero.quantize_grads=none", "zero.error_feedback=true",
                                "zero.grad_rounding=stochastic", "zero.quantize_block=7"})),
            *comm);
        EXPECT_EQ(none.losses, plain.losses);
        EXPECT_EQ(none.params, plain.params);
        EXPECT_LT(none.losses.back(), none.losses.front());
        if (stage == 3 && sharding.empty()) {  // stage 2 reduces as stage 3 does, bitwise
          const auto stage2 = zm::testing::train(
              zm::testing::test_deck(2, kGlobalBatch / N, grad_accum, {"zero.quantize_grads=none"}),
              *comm);
          EXPECT_EQ(none.losses, stage2.losses);
          EXPECT_EQ(none.params, stage2.params);
        }
      }
}

// The largest relative loss gap of a quantized run from the plain one over the deck's steps.
double loss_gap(const zm::testing::TrainedRun& run, const zm::testing::TrainedRun& plain) {
  double worst = 0;
  for (size_t s = 0; s < plain.losses.size(); ++s)
    worst = std::max(worst, std::fabs(run.losses[s] / plain.losses[s] - 1.0));
  return worst;
}

TEST(QuantizedGrads, TracksTheUncompressedLoss) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  if (kGlobalBatch % N != 0) GTEST_SKIP() << "global batch not divisible by " << N;
  for (int stage = 1; stage <= 3; ++stage)
    for (const auto& sharding : shardings(N, stage)) {
      const auto plain =
          zm::testing::train(zm::testing::test_deck(stage, kGlobalBatch / N, 2, sharding), *comm);
      for (const char* bits : {"int8", "int4"})
        for (const char* feedback : {"false", "true"}) {
          const std::string label = fmt::format("stage {}, {} ranks, {}, {}, error_feedback {}",
                                                stage, N, fmt::join(sharding, " "), bits, feedback);
          SCOPED_TRACE(label);
          const auto run = zm::testing::train(
              zm::testing::test_deck(stage, kGlobalBatch / N, 2,
                                     with(sharding, {std::string("zero.quantize_grads=") + bits,
                                                     std::string("zero.error_feedback=") + feedback,
                                                     "zero.quantize_block=64"})),
              *comm);
          ASSERT_EQ(run.losses.size(), plain.losses.size());
          const double gap = loss_gap(run, plain);
          EXPECT_LE(gap, std::string(bits) == "int8" ? kInt8LossTolerance : kInt4LossTolerance);
          EXPECT_NE(run.params, plain.params) << "the gradients were not quantized";
          EXPECT_LT(run.losses.back(), run.losses.front());
          EXPECT_EQ(largest_difference_from_rank0(run.params), 0.0f) << "the ranks' models differ";
          if (comm->rank() == 0)
            std::printf("[ info ] %s: largest relative loss gap %.3g\n", label.c_str(), gap);
        }
    }
}

TEST(QuantizedGrads, RepeatsBitForBitStochasticRoundingIncluded) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  if (kGlobalBatch % N != 0) GTEST_SKIP() << "global batch not divisible by " << N;
  const std::vector<std::string> keys = {"zero.quantize_grads=int4", "zero.error_feedback=true",
                                         "zero.quantize_block=16"};
  const auto deck =
      zm::testing::test_deck(2, kGlobalBatch / N, 1, with(keys, {"zero.grad_rounding=stochastic"}));
  const auto first = zm::testing::train(deck, *comm);
  const auto second = zm::testing::train(deck, *comm);
  EXPECT_EQ(first.losses, second.losses);
  EXPECT_EQ(first.params, second.params);
  const auto nearest = zm::testing::train(
      zm::testing::test_deck(2, kGlobalBatch / N, 1, with(keys, {"zero.grad_rounding=nearest"})),
      *comm);
  EXPECT_NE(first.params, nearest.params) << "stochastic rounding changed nothing";
  const auto reseeded = zm::testing::train(
      zm::testing::test_deck(2, kGlobalBatch / N, 1,
                             with(keys, {"zero.grad_rounding=stochastic", "train.seed=8"})),
      *comm);
  EXPECT_NE(first.losses, reseeded.losses);
}

TEST(QuantizedGrads, RefusedAtStageZeroAndWithOddInt4Blocks) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const auto refused = [&](const zm::Deck& deck, int stage, const char* key, const char* says) {
    try {
      zm::make_trainer(deck, stage, *comm);
      ADD_FAILURE() << "stage " << stage << " ran";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  refused(zm::testing::test_deck(0, 1, 1, {"zero.quantize_grads=int8"}), 0, "zero.quantize_grads",
          "stage 1-3");
  refused(zm::testing::test_deck(2, 1, 1, {"zero.quantize_grads=int4", "zero.quantize_block=7"}), 2,
          "zero.quantize_block", "even");
  EXPECT_ANY_THROW(zm::testing::test_deck(2, 1, 1, {"zero.quantize_grads=int2"}));
  EXPECT_ANY_THROW(zm::testing::test_deck(2, 1, 1, {"zero.error_feedback=maybe"}));
}

}  // namespace
