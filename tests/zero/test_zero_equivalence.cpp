// The proof that the stages are right: every stage at every rank count trains the same model as
// stage 0 at one rank, step for step.
//
// The global batch is held fixed (12 sequences of 16 tokens): at N ranks each rank takes 12/N,
// and the data source hands out sequences by global index, so every run sees the same data.
// The reference, stage 0 at one rank, runs on every rank over MPI_COMM_SELF
// (common/equivalence.hpp, with the tolerances).
#include <gtest/gtest.h>

#include "common/equivalence.hpp"
#include "common/test_watchdog.hpp"

namespace {

using zm::testing::expect_same_training;
using zm::testing::kGlobalBatch;
using zm::testing::reference;

class Equivalence : public ::testing::TestWithParam<int> {};

TEST_P(Equivalence, MatchesStageZeroOnOneRank) {
  const int stage = GetParam();
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  if (kGlobalBatch % N != 0) GTEST_SKIP() << "global batch not divisible by " << N;
  const zm::Deck deck = zm::testing::test_deck(stage, kGlobalBatch / N);
  expect_same_training(zm::testing::train(deck, *comm), reference(1));
}

TEST_P(Equivalence, GradientAccumulationEqualsTheLargerBatch) {
  const int stage = GetParam();
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  // Two micro-steps of 12/N sequences per rank against one batch of 24.
  const zm::Deck deck = zm::testing::test_deck(stage, kGlobalBatch / N, 2);
  expect_same_training(zm::testing::train(deck, *comm), reference(2));
}

TEST_P(Equivalence, OverlapOffGivesBitwiseTheSameResult) {
  const int stage = GetParam();
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  const auto with = zm::testing::train(zm::testing::test_deck(stage, kGlobalBatch / N), *comm);
  const auto without = zm::testing::train(
      zm::testing::test_deck(stage, kGlobalBatch / N, 1, {"zero.overlap=false"}), *comm);
  EXPECT_EQ(with.losses, without.losses);
  EXPECT_EQ(with.params, without.params);
}

INSTANTIATE_TEST_SUITE_P(Stages, Equivalence, ::testing::Values(0, 1, 2, 3));

// At one rank count, the stages compute the same arithmetic in the same order except for the
// gradient reduction: stage 0 all-reduces, stages 1-3 reduce-scatter. Stages 1, 2 and 3 must
// agree bitwise; stage 0 is reported (it agrees bitwise where the MPI library sums in the same
// order in both collectives, e.g. at 2 ranks).
TEST(StagesAtOneRankCount, ShardedStagesAgreeBitwise) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  std::vector<zm::testing::TrainedRun> runs;
  for (int stage = 0; stage <= 3; ++stage)
    runs.push_back(zm::testing::train(zm::testing::test_deck(stage, kGlobalBatch / N), *comm));
  for (int stage = 2; stage <= 3; ++stage) {
    EXPECT_EQ(runs[stage].losses, runs[1].losses) << "stage " << stage;
    EXPECT_EQ(runs[stage].params, runs[1].params) << "stage " << stage;
  }
  const bool stage0_bitwise = runs[0].params == runs[1].params && runs[0].losses == runs[1].losses;
  RecordProperty("stage0_bitwise_equal_to_stage1", stage0_bitwise ? "yes" : "no");
  if (N <= 2) {
    EXPECT_TRUE(stage0_bitwise);
  }
  if (comm->rank() == 0)
    std::printf("[ info ] %d ranks: stage 0 %s bitwise equal to stages 1-3\n", N,
                stage0_bitwise ? "is" : "is not");
}

}  // namespace
