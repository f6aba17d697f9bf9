// train.precision = "bf16": bf16 parameters, activations and gradients with fp32 master weights
// and Adam state. Needs a Kokkos with a bfloat16 type (>= 4); elsewhere the deck is refused
// (tests/core/test_deck.cpp checks that error) and these tests are skipped.
#include <gtest/gtest.h>

#include <cmath>

#include "common/equivalence.hpp"
#include "common/rounded_masters.hpp"
#include "common/test_watchdog.hpp"
#include "common/zero_test_util.hpp"

#if ZEROMINI_HAVE_BF16

#include "train/trainer_typed.hpp"
#include "zero/engine.hpp"

namespace {

using zm::testing::kGlobalBatch;

zm::testing::TrainedRun train_at(int stage, const std::string& precision, zm::Communicator& comm) {
  const zm::Deck deck = zm::testing::test_deck(stage, kGlobalBatch / comm.size(), 1,
                                               {"train.precision=" + precision});
  return zm::testing::train(deck, comm);
}

bool divides_batch(int ranks) {
  return kGlobalBatch % ranks == 0;
}

class MixedPrecision : public ::testing::TestWithParam<int> {};

// bf16 training follows fp32 training: bf16 keeps 8 bits of mantissa, so activations and
// gradients carry relative errors of ~0.4%, but the loss curve must stay on the fp32 one and
// fall with it.
TEST_P(MixedPrecision, TracksTheFp32LossCurve) {
  const int stage = GetParam();
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  if (!divides_batch(comm->size())) GTEST_SKIP() << "global batch not divisible";
  const auto fp32 = train_at(stage, "fp32", *comm);
  const auto bf16 = train_at(stage, "bf16", *comm);
  ASSERT_EQ(bf16.losses.size(), fp32.losses.size());
  for (size_t s = 0; s < fp32.losses.size(); ++s)
    EXPECT_NEAR(bf16.losses[s], fp32.losses[s], 0.02 * fp32.losses[s]) << "step " << s;
  EXPECT_LT(bf16.losses.back(), bf16.losses.front() - 0.05);
  // The masters stay near the fp32 parameters as a whole (single elements may not: AdamW
  // normalises each gradient element, so where fp32 and bf16 gradients differ in sign an element
  // can move by up to lr = 1e-2 per step in opposite directions).
  double diff = 0, norm = 0;
  for (size_t i = 0; i < fp32.params.size(); ++i) {
    diff += std::pow(static_cast<double>(bf16.params[i]) - fp32.params[i], 2);
    norm += std::pow(static_cast<double>(fp32.params[i]), 2);
  }
  EXPECT_LT(std::sqrt(diff / norm), 0.05);
}

// The bf16 compute parameters are the rounding of the fp32 masters after every step, and the
// stage's gathers deliver them: compared on each rank over the range it holds.
TEST_P(MixedPrecision, ParametersAreTheRoundedMasters) {
  const int stage = GetParam();
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  if (!divides_batch(comm->size())) GTEST_SKIP() << "global batch not divisible";
  const zm::Deck deck = zm::testing::test_deck(stage, kGlobalBatch / comm->size(), 1,
                                               {"train.precision=bf16", "train.steps=3"});
  zm::TrainerT<zm::bf16> trainer(deck, stage, *comm);
  trainer.init_parameters();
  for (int64_t s = 0; s < 3; ++s) trainer.step(s);
  const auto [compared, differing] = zm::testing::compare_with_rounded_masters(trainer);
  EXPECT_GT(compared, 0);
  EXPECT_EQ(differing, 0) << "of " << compared << " parameters";
}

INSTANTIATE_TEST_SUITE_P(Stages, MixedPrecision, ::testing::Values(0, 1, 2, 3));

// Stages 1, 2 and 3 reduce-scatter the same bf16 gradients in the same order and update the same
// fp32 masters: bitwise the same run. Stage 0 all-reduces instead (close, not bitwise).
TEST(MixedPrecisionStages, ShardedStagesAgreeBitwise) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  if (!divides_batch(comm->size())) GTEST_SKIP() << "global batch not divisible";
  const auto stage1 = train_at(1, "bf16", *comm);
  for (int stage : {2, 3}) {
    const auto run = train_at(stage, "bf16", *comm);
    EXPECT_EQ(run.losses, stage1.losses) << "stage " << stage;
    EXPECT_TRUE(run.params == stage1.params) << "stage " << stage;
  }
  const auto stage0 = train_at(0, "bf16", *comm);
  for (size_t s = 0; s < stage0.losses.size(); ++s)
    EXPECT_NEAR(stage0.losses[s], stage1.losses[s], 0.01 * stage1.losses[s]) << "step " << s;
}

// Collectives move bf16: half the bytes of the same run in fp32 (and one rank moves none).
TEST(MixedPrecisionStages, CollectivesMoveHalfTheBytes) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  if (!divides_batch(comm->size())) GTEST_SKIP() << "global batch not divisible";
  for (int stage = 0; stage <= 3; ++stage) {
    const auto fp32 = train_at(stage, "fp32", *comm);
    const auto bf16 = train_at(stage, "bf16", *comm);
    for (int op :
         {static_cast<int>(zm::CommOp::ReduceScatter), static_cast<int>(zm::CommOp::AllGather)}) {
      const double full = fp32.records.back().comm.ops[op].bytes;
      EXPECT_DOUBLE_EQ(bf16.records.back().comm.ops[op].bytes, full / 2)
          << "stage " << stage << " " << zm::comm_op_name(zm::CommOp(op));
      if (stage == 0) continue;
      if (comm->size() == 1) {
        EXPECT_EQ(full, 0.0) << "one rank sends nothing";
      } else {
        EXPECT_GT(full, 0.0) << "the stage moves its gradients";
      }
    }
    // All-reduces: the gradients (stage 0) and the step's fp32 statistics (the loss and a sum of
    // squares per dataset: the test deck's embedding, 2 blocks and final norm).
    const int all_reduce = static_cast<int>(zm::CommOp::AllReduce);
    const double stats =
        zm::ring_bytes(zm::CommOp::AllReduce, (1 + 2 + 2) * sizeof(float), comm->size());
    const double fp32_gradients = fp32.records.back().comm.ops[all_reduce].bytes - stats;
    EXPECT_NEAR(bf16.records.back().comm.ops[all_reduce].bytes - stats, fp32_gradients / 2,
                1e-9 * (1 + fp32_gradients))
        << "stage " << stage;
  }
}

}  // namespace

#else

TEST(MixedPrecision, NeedsABuildWithBf16) {
  GTEST_SKIP() << "this build's Kokkos has no bfloat16 type; the deck is refused (test_deck)";
}

#endif
