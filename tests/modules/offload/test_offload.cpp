// ZeRO-Offload (zero.offload_optimizer, zero.offload_params) changes where the optimizer state and
// the parameter shard live and where AdamW runs, not the arithmetic: the reduced gradients reach
// the host by an exact copy, the host's AdamW is the device's element function in the same order
// (kernels/adamw.hpp), and the updated values come back by an exact copy. So a run with offload
// trains the same model as one without, bit for bit, at every stage that offloads and every rank
// count, and beside everything else a run may turn on (hybrid sharding, hpZ, qwZ, qgZ,
// recomputation, gradient accumulation; beside tensor parallelism the module's tests check it).
//
// Under bf16 the same holds on a host: the master update is the same fp32 arithmetic, rounded to
// bf16 by the same conversion. On a GPU the device's AdamW is compiled by another compiler for
// another processor, whose contraction of a * b + c into one fused operation may differ from the
// host's: each fp32 result may then differ by an ulp or so (2^-23 relative), which can flip the
// rounding of a bf16 parameter by one bf16 ulp (2^-8 relative) where the fp32 value lies within
// an ulp of a rounding boundary. Over the test's five steps at lr 1e-2 that moves the loss by far
// less than 1e-3 relative: the bound the test takes where the device is not the host.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "common/equivalence.hpp"
#include "common/test_watchdog.hpp"
#include "common/zero_test_util.hpp"
#include "core/error.hpp"
#include "modules/offload/host_transfer.hpp"

namespace {

using zm::testing::kGlobalBatch;

// Trains the deck with and without the offload overrides; both on the same ranks.
void expect_offload_changes_nothing(int stage, std::vector<std::string> common,
                                    const std::vector<std::string>& offload, zm::Communicator& comm,
                                    bool bitwise = true) {
  SCOPED_TRACE(fmt::format("stage {}, {} ranks, {} + {}", stage, comm.size(),
                           fmt::join(common, " "), fmt::join(offload, " ")));
  const int N = comm.size();
  // A run without the overrides copies nothing unless its own keys offload.
  const bool offloads_without = std::any_of(common.begin(), common.end(), [](const std::string& k) {
    return k.find("offload") != std::string::npos;
  });
  // The copies this rank makes while `train` runs.
  auto copies_of = [](const auto& train) {
    const zm::TransferStats before = zm::this_rank_copies().stats();
    train();
    return zm::transfers_between(before, zm::this_rank_copies().stats());
  };
  zm::testing::TrainedRun without, with;
  const zm::TransferStats copied_without = copies_of([&] {
    without = zm::testing::train(zm::testing::test_deck(stage, kGlobalBatch / N, 1, common), comm);
  });
  common.insert(common.end(), offload.begin(), offload.end());
  const zm::TransferStats copied_with = copies_of([&] {
    with = zm::testing::train(zm::testing::test_deck(stage, kGlobalBatch / N, 1, common), comm);
  });
  // Offload ran: it copied both ways, at least once a step more than without.
  const uint64_t steps = with.records.size();
  for (const auto d : {zm::TransferDirection::ToHost, zm::TransferDirection::ToDevice}) {
    EXPECT_GE(copied_with[d].calls, copied_without[d].calls + steps);
    EXPECT_GT(copied_with[d].bytes, copied_without[d].bytes);
  }
  if (!offloads_without) {
    EXPECT_EQ(copied_without.total().calls, 0u);
  }
  if (bitwise) {
    EXPECT_EQ(with.losses, without.losses);
    EXPECT_EQ(with.params, without.params);
    return;
  }
  ASSERT_EQ(with.losses.size(), without.losses.size());
  for (size_t s = 0; s < with.losses.size(); ++s)
    EXPECT_NEAR(with.losses[s], without.losses[s], 1e-3 * std::fabs(without.losses[s]))
        << "step " << s + 1;
}

class Offload : public ::testing::TestWithParam<int> {};

TEST_P(Offload, OptimizerOnTheHostTrainsTheSameModelBitwise) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  if (kGlobalBatch % comm->size() != 0) GTEST_SKIP() << "global batch not divisible";
  expect_offload_changes_nothing(GetParam(), {}, {"zero.offload_optimizer=host"}, *comm);
  // Gradient accumulation and recomputation change backward, not the update.
  expect_offload_changes_nothing(GetParam(), {"train.grad_accum=2", "model.recompute=blocks"},
                                 {"zero.offload_optimizer=host"}, *comm);
}

// zero.offload_params is stage 3's.
TEST(OffloadParams, ParametersOnTheHostTooAtStageThree) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  if (kGlobalBatch % comm->size() != 0) GTEST_SKIP() << "global batch not divisible";
  const std::vector<std::string> offload = {"zero.offload_optimizer=host",
                                            "zero.offload_params=host"};
  expect_offload_changes_nothing(3, {}, offload, *comm);
  expect_offload_changes_nothing(3, {"zero.prefetch=2", "zero.quantize_weights=int8"}, offload,
                                 *comm);
}

TEST_P(Offload, UnderMixedPrecision) {
  if (!ZEROMINI_HAVE_BF16) GTEST_SKIP() << "this Kokkos has no bf16";
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  if (kGlobalBatch % comm->size() != 0) GTEST_SKIP() << "global batch not divisible";
  const int stage = GetParam();
  std::vector<std::vector<std::string>> offloads = {{"zero.offload_optimizer=host"}};
  if (stage == 3) offloads.push_back({"zero.offload_optimizer=host", "zero.offload_params=host"});
  for (const auto& offload : offloads)
    for (const char* reduce : {"compute", "fp32"})
      expect_offload_changes_nothing(
          stage, {"train.precision=bf16", fmt::format("train.reduce_precision={}", reduce)},
          offload, *comm, zm::device_is_host());
}

// ZeRO++'s compressed gradients (qgZ) and hybrid sharding, hpZ: each with offload where the ranks
// allow it (beside tensor parallelism: tests/modules/tensor_parallel/).
TEST_P(Offload, BesideTheOtherShardingsAndCompressions) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size(), stage = GetParam();
  if (kGlobalBatch % N != 0) GTEST_SKIP() << "global batch not divisible";
  const std::vector<std::string> offload = {"zero.offload_optimizer=host"};
  expect_offload_changes_nothing(stage, {"zero.quantize_grads=int8"}, offload, *comm);
  if (N >= 4 && N % 2 == 0) {
    expect_offload_changes_nothing(stage, {"zero.shard_size=2"}, offload, *comm);
    if (stage == 3 && zm::testing::key_built("zero.secondary_shard_size"))  // hpZ (zeropp)
      expect_offload_changes_nothing(stage, {"zero.secondary_shard_size=2"}, offload, *comm);
  }
}

INSTANTIATE_TEST_SUITE_P(Stages, Offload, ::testing::Values(1, 2, 3));

// model.checkpoints = "host": the blocks' outputs go to host memory and back by exact copies, at
// every stage, alone and beside the optimizer's offload, with gradient accumulation.
class CheckpointsOnTheHost : public ::testing::TestWithParam<int> {};

TEST_P(CheckpointsOnTheHost, TrainTheSameModelBitwise) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  if (kGlobalBatch % comm->size() != 0) GTEST_SKIP() << "global batch not divisible";
  const int stage = GetParam();
  const std::vector<std::string> recompute = {"model.recompute=blocks", "model.layers=5"};
  expect_offload_changes_nothing(stage, recompute, {"model.checkpoints=host"}, *comm);
  if (stage == 0) return;
  std::vector<std::string> accumulated = recompute;
  accumulated.insert(accumulated.end(), {"train.grad_accum=2", "zero.offload_optimizer=host"});
  expect_offload_changes_nothing(stage, accumulated, {"model.checkpoints=host"}, *comm);
}

INSTANTIATE_TEST_SUITE_P(Stages, CheckpointsOnTheHost, ::testing::Values(0, 1, 2, 3));

// Where the keys do not apply, a run refuses them naming the key and what was expected.
TEST(OffloadRefused, WhereItDoesNotApply) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const struct {
    int stage;
    std::vector<std::string> keys;
    const char* expected;
  } cases[] = {
      {0,
       {"zero.offload_optimizer=host"},
       "zero.offload_optimizer = \"host\" needs zero.stage 1-3"},
      {2,
       {"zero.offload_optimizer=host", "zero.offload_params=host"},
       "zero.offload_params = \"host\" needs zero.stage = 3"},
      {3, {"zero.offload_params=host"}, "needs zero.offload_optimizer = \"host\""},
      {1,
       {"model.checkpoints=host"},
       "model.checkpoints = \"host\" keeps what model.recompute = \"blocks\" keeps"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(fmt::format("stage {}: {}", c.stage, fmt::join(c.keys, " ")));
    const zm::Deck deck = zm::testing::test_deck(c.stage, 2, 1, c.keys);
    try {
      zm::make_trainer(deck, c.stage, *comm);
      ADD_FAILURE() << "accepted";
    } catch (const zm::Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.expected), std::string::npos) << e.what();
    }
  }
}

}  // namespace
