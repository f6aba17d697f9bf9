// What `zeromini plan` predicts under ZeRO-Offload is what a run allocates, sends and copies
// between host and device, byte for byte (common/planned_equals_measured.hpp).
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "common/planned_equals_measured.hpp"
#include "common/test_watchdog.hpp"
#include "common/zero_test_util.hpp"
#include "modules/offload/host_copies.hpp"
#include "plan/planner.hpp"

namespace {

// The shared check, and each step's host-device copies on this rank (this_rank_copies), by
// direction: bytes and copies, as the module's copy list plans them.
void check_planned_equals_measured(const zm::Deck& deck, int stage, zm::Communicator& comm) {
  const zm::ZeroMesh mesh = zm::plan_zero_mesh(deck, stage, comm.size(), nullptr);
  const zm::PlannedTransfers planned = zm::run_transfers(deck, stage, mesh);
  zm::TransferStats before;
  zm::testing::check_planned_equals_measured(deck, stage, comm, [&](zm::Trainer&, bool after) {
    if (!after) {
      before = zm::this_rank_copies().stats();
      return;
    }
    const zm::TransferStats step = zm::transfers_between(before, zm::this_rank_copies().stats());
    for (int d = 0; d < zm::kTransferDirections; ++d) {
      const auto direction = static_cast<zm::TransferDirection>(d);
      SCOPED_TRACE(zm::transfer_direction_name(direction));
      EXPECT_EQ(step[direction].bytes, planned.bytes[d]);
      EXPECT_EQ(static_cast<int64_t>(step[direction].calls), planned.calls[d]);
    }
  });
}

// ZeRO-Offload: the optimizer state (and at stage 3 the parameter shard) in host memory, its
// staging and the host-device copies, in each precision, with gradient accumulation, within
// shard groups of 2 and under hpZ (optimizer only) where the ranks allow.
// Stages 1-3: stage 0 replicates the optimizer state and offloads nothing.
class PlannedEqualsMeasuredOffload : public ::testing::TestWithParam<int> {};

TEST_P(PlannedEqualsMeasuredOffload, MemoryTrafficAndTransfers) {
  const int stage = GetParam();
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  std::vector<std::vector<std::string>> precisions = {{"train.precision=fp32"}};
  if (ZEROMINI_HAVE_BF16) precisions.push_back({"train.precision=bf16"});
  if (ZEROMINI_HAVE_BF16)
    precisions.push_back({"train.precision=bf16", "train.reduce_precision=fp32"});
  std::vector<std::vector<std::string>> offloads = {{"zero.offload_optimizer=host"}};
  if (stage == 3) offloads.push_back({"zero.offload_optimizer=host", "zero.offload_params=host"});
  if (N >= 4 && N % 2 == 0) {
    offloads.push_back({"zero.offload_optimizer=host", "zero.shard_size=2"});
    if (stage == 3 && zm::testing::key_built("zero.secondary_shard_size"))  // hpZ (zeropp)
      offloads.push_back({"zero.offload_optimizer=host", "zero.secondary_shard_size=2"});
  }
  for (const auto& offload : offloads)
    for (const auto& precision : precisions)
      for (const int64_t grad_accum : {1, 2}) {
        SCOPED_TRACE(fmt::format("stage {}, {} ranks, {}, grad_accum {}, {}", stage, N,
                                 fmt::join(offload, " "), grad_accum, fmt::join(precision, " ")));
        std::vector<std::string> overrides = {"train.steps=2"};
        overrides.insert(overrides.end(), precision.begin(), precision.end());
        overrides.insert(overrides.end(), offload.begin(), offload.end());
        const zm::Deck deck = zm::testing::test_deck(stage, 3, grad_accum, overrides);
        const zm::ZeroMesh mesh = zm::plan_zero_mesh(deck, stage, N, nullptr);
        // Offload moves state to the host: host memory and copies both ways, planned and run.
        EXPECT_GT(zm::plan_memory(deck, stage, mesh).host(), 0.0);
        EXPECT_GT(zm::run_transfers(deck, stage, mesh).bytes[0], 0.0);
        EXPECT_GT(zm::run_transfers(deck, stage, mesh).bytes[1], 0.0);
        check_planned_equals_measured(deck, stage, *comm);
      }
}

INSTANTIATE_TEST_SUITE_P(Stages, PlannedEqualsMeasuredOffload, ::testing::Values(1, 2, 3));

// model.checkpoints = "host": the blocks' outputs in host memory, and their copies, alone and
// beside the optimizer's offload, with gradient accumulation.
class PlannedEqualsMeasuredCheckpoints : public ::testing::TestWithParam<int> {};

TEST_P(PlannedEqualsMeasuredCheckpoints, HostMemoryAndCopies) {
  const int stage = GetParam();
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  std::vector<std::vector<std::string>> others = {{}};
  if (stage > 0) others.push_back({"zero.offload_optimizer=host"});
  for (const auto& other : others)
    for (const int64_t grad_accum : {1, 2}) {
      SCOPED_TRACE(
          fmt::format("stage {}, grad_accum {}, {}", stage, grad_accum, fmt::join(other, " ")));
      std::vector<std::string> overrides = {"train.steps=2", "model.recompute=blocks",
                                            "model.layers=4", "model.checkpoints=host"};
      overrides.insert(overrides.end(), other.begin(), other.end());
      const zm::Deck deck = zm::testing::test_deck(stage, 3, grad_accum, overrides);
      const zm::ZeroMesh mesh = zm::plan_zero_mesh(deck, stage, comm->size(), nullptr);
      // Two of the four blocks' outputs on the host, each copied out and back every micro-step.
      const double output = 3.0 * static_cast<double>(deck.model.seq_len * deck.model.dim) * 4;
      EXPECT_GE(zm::plan_memory(deck, stage, mesh).host(), 2 * output);
      const zm::PlannedTransfers copies = zm::run_transfers(deck, stage, mesh);
      EXPECT_GE(copies.calls[0], 2 * grad_accum);
      EXPECT_GE(copies.calls[1], 2 * grad_accum);
      check_planned_equals_measured(deck, stage, *comm);
    }
}

INSTANTIATE_TEST_SUITE_P(Stages, PlannedEqualsMeasuredCheckpoints, ::testing::Values(0, 1, 2, 3));

}  // namespace
