// What `zeromini plan` predicts under ZeRO++ (qwZ, qgZ, beside hybrid sharding and hpZ) is what a
// run allocates and sends, byte for byte (common/planned_equals_measured.hpp). Beside tensor
// parallelism: the tensor_parallel module's tests.
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "common/planned_equals_measured.hpp"
#include "common/test_watchdog.hpp"
#include "common/zero_test_util.hpp"
#include "cross_node_steps.hpp"
#include "plan/planner.hpp"

namespace {

using zm::testing::check_planned_equals_measured;
using zm::testing::check_planned_equals_measured_cross_node;

// qwZ (stage 3): the parameter gathers as packed int8 segments, with the default block and one
// that cuts shards unevenly (7), alone, within shard groups of 2 and under hpZ with groups of 2
// (under bf16 its gather of the updated sub-shards across the groups in int8 too, in two packed
// buffers with overlap and one without).
TEST(PlannedEqualsMeasuredQuantized, MemoryAndTrafficWithInt8WeightGathers) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  std::vector<std::vector<std::string>> precisions = {{"train.precision=fp32"}};
  if (ZEROMINI_HAVE_BF16) precisions.push_back({"train.precision=bf16"});
  std::vector<std::vector<std::string>> shardings = {{"zero.shard_size=0"}};
  if (N >= 4 && N % 2 == 0) {
    shardings.push_back({"zero.shard_size=2"});
    shardings.push_back({"zero.secondary_shard_size=2"});
    shardings.push_back({"zero.secondary_shard_size=2", "zero.overlap=false"});
  }
  for (const auto& sharding : shardings)
    for (const auto& precision : precisions)
      for (const int64_t grad_accum : {1, 2})
        for (const char* block : {"2048", "7"}) {
          SCOPED_TRACE(fmt::format("{} ranks, {}, grad_accum {}, {}, block {}", N,
                                   fmt::join(sharding, " "), grad_accum, fmt::join(precision, " "),
                                   block));
          std::vector<std::string> overrides = {"train.steps=2", "zero.quantize_weights=int8",
                                                std::string("zero.quantize_block=") + block};
          overrides.insert(overrides.end(), precision.begin(), precision.end());
          overrides.insert(overrides.end(), sharding.begin(), sharding.end());
          check_planned_equals_measured(zm::testing::test_deck(3, 3, grad_accum, overrides), 3,
                                        *comm);
        }
}

// The int8 gathers move about a quarter of the fp32 ones (codes plus a scale per block), and the
// plan says so: the all-gather bytes within the group shrink by that ratio.
TEST(PlannedEqualsMeasuredQuantized, Int8GathersMoveAQuarterOfFp32) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  if (comm->size() < 2) GTEST_SKIP() << "one rank gathers nothing";
  const zm::Deck plain = zm::testing::test_deck(3, 3, 1, {"train.precision=fp32"});
  const zm::Deck int8 = zm::testing::test_deck(
      3, 3, 1, {"train.precision=fp32", "zero.quantize_weights=int8", "zero.quantize_block=256"});
  const zm::ZeroMesh mesh = zm::plan_zero_mesh(plain, 3, comm->size(), nullptr);
  const auto gathered = [&](const zm::Deck& deck) {
    return zm::plan_traffic(deck, 3, mesh)[static_cast<size_t>(zm::CommLevel::IntraGroup)]
                                          [static_cast<size_t>(zm::CommOp::AllGather)];
  };
  const double ratio = gathered(int8) / gathered(plain);
  EXPECT_GT(ratio, 0.25);                               // the codes alone
  EXPECT_LT(ratio, 0.25 * (1.0 + 4.0 / 256.0) + 0.01);  // a scale per 256 codes, and padding
}

// qgZ (stages 1-3): the gradient exchanges as packed int8 / int4 segments within the group and
// across the groups (shard groups of 2; hpZ groups of 2 at stage 3, beside int8 weight gathers),
// with and without error feedback (its residuals), with gradient accumulation, and a block that
// cuts the shards unevenly.
TEST(PlannedEqualsMeasuredQuantized, MemoryAndTrafficWithQuantizedGradients) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  std::vector<std::string> precisions = {"train.precision=fp32"};
  if (ZEROMINI_HAVE_BF16) precisions.push_back("train.precision=bf16");
  for (int stage = 1; stage <= 3; ++stage) {
    std::vector<std::vector<std::string>> shardings = {{"zero.shard_size=0"}};
    if (N >= 4 && N % 2 == 0) {
      shardings.push_back({"zero.shard_size=2"});
      if (stage == 3)
        shardings.push_back({"zero.secondary_shard_size=2", "zero.quantize_weights=int8"});
    }
    for (const auto& sharding : shardings)
      for (const char* bits : {"int8", "int4"})
        for (const char* feedback : {"false", "true"})
          for (const auto& precision : precisions)
            for (const int64_t grad_accum : {1, 2}) {
              SCOPED_TRACE(fmt::format(
                  "stage {}, {} ranks, {}, {}, error_feedback {}, {}, "
                  "grad_accum {}",
                  stage, N, fmt::join(sharding, " "), bits, feedback, precision, grad_accum));
              std::vector<std::string> overrides = {"train.steps=2",
                                                    std::string("zero.quantize_grads=") + bits,
                                                    std::string("zero.error_feedback=") + feedback,
                                                    "zero.quantize_block=10", precision};
              overrides.insert(overrides.end(), sharding.begin(), sharding.end());
              check_planned_equals_measured(zm::testing::test_deck(stage, 3, grad_accum, overrides),
                                            stage, *comm);
            }
  }
}

// Across the groups, int8 gradients move about a quarter of the fp32 all-reduce's bytes at most
// (codes plus scales; an all-gather of one segment per replica in place of a ring all-reduce),
// and the plan's all-to-all within the group about a quarter of the reduce-scatter's.
TEST(PlannedEqualsMeasuredQuantized, Int8GradientsMoveAboutAQuarterOfFp32) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  if (comm->size() < 4) GTEST_SKIP() << "two groups of two ranks";
  const std::vector<std::string> base = {"train.precision=fp32", "zero.shard_size=2"};
  const zm::Deck plain = zm::testing::test_deck(2, 3, 1, base);
  std::vector<std::string> int8_keys = base;
  int8_keys.insert(int8_keys.end(), {"zero.quantize_grads=int8", "zero.quantize_block=256"});
  const zm::Deck int8 = zm::testing::test_deck(2, 3, 1, int8_keys);
  const zm::ZeroMesh mesh = zm::plan_zero_mesh(plain, 2, comm->size(), nullptr);
  const auto bytes = [&](const zm::Deck& deck, zm::CommLevel level, zm::CommOp op) {
    return zm::plan_traffic(deck, 2, mesh)[static_cast<size_t>(level)][static_cast<size_t>(op)];
  };
  using zm::CommLevel;
  using zm::CommOp;
  const double in_group = bytes(int8, CommLevel::IntraGroup, CommOp::AllToAll) /
                          bytes(plain, CommLevel::IntraGroup, CommOp::ReduceScatter);
  EXPECT_GT(in_group, 0.25);
  EXPECT_LT(in_group, 0.25 * (1.0 + 4.0 / 256.0) + 0.01);
  EXPECT_EQ(bytes(int8, CommLevel::IntraGroup, CommOp::ReduceScatter), 0.0);
  // Two replicas: the all-reduce sends 2 (N-1)/N = 1 shard of fp32, the all-gather 1/2 of two
  // int8 segments.
  const double across = bytes(int8, CommLevel::InterGroup, CommOp::AllGather) /
                        bytes(plain, CommLevel::InterGroup, CommOp::AllReduce);
  EXPECT_GT(across, 0.25);
  EXPECT_LT(across, 0.25 * (1.0 + 4.0 / 256.0) + 0.01);
}

// Two faked nodes of 2 ranks (zero.ranks_per_node = 2) at 4 ranks: the bytes each rank sends out
// of its node (modules/zeropp/cross_node.hpp, counted as a run counts them: cross_node_steps.hpp),
// plain and under each sharding option that changes which communicators span the nodes and what
// they move (hpZ at stage 3, ignored below), with tp 2 where the build has it (a tp group within
// each node, the shard groups across them), and under ZeRO++. Plain qgZ (one group of 4 over both
// nodes) takes its two hops by node: the all-to-all within each node and the one across, in int8
// and int4, with error feedback too; stage 3's qwZ alone, and with hpZ and qgZ (int4, groups of a
// node).
TEST(PlannedEqualsMeasuredCrossNodeZeropp, TwoNodesOfTwoRanks) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  if (comm->size() != 4) GTEST_SKIP() << "4 ranks on two nodes of 2";
  std::vector<std::string> precisions = {"train.precision=fp32"};
  if (ZEROMINI_HAVE_BF16) precisions.push_back("train.precision=bf16");
  std::vector<std::vector<std::string>> options = {
      {},
      {"zero.shard_size=2"},
      {"zero.secondary_shard_size=2"},
      {"zero.quantize_grads=int8"},
      {"zero.quantize_grads=int4"},
      {"zero.quantize_grads=int8", "zero.error_feedback=true", "zero.quantize_block=10"},
      {"zero.quantize_grads=int4", "zero.shard_size=2"}};
#if ZEROMINI_TEST_TENSOR_PARALLEL
  options.push_back({"parallel.tp=2"});
#endif
  for (int stage = 1; stage <= 3; ++stage)
    for (const auto& option : options)
      for (const auto& precision : precisions) {
        SCOPED_TRACE(fmt::format("stage {}, {}, {}", stage, fmt::join(option, " "), precision));
        std::vector<std::string> overrides = {"train.steps=2", "zero.ranks_per_node=2", precision};
        overrides.insert(overrides.end(), option.begin(), option.end());
        check_planned_equals_measured_cross_node(zm::testing::test_deck(stage, 3, 1, overrides),
                                                 stage, *comm);
      }
  const std::vector<std::vector<std::string>> zeropp = {
      {"zero.quantize_weights=int8"},
      {"zero.quantize_weights=int8", "zero.secondary_shard_size=2", "zero.quantize_grads=int4"}};
  for (const auto& option : zeropp)
    for (const auto& precision : precisions) {
      SCOPED_TRACE(fmt::format("stage 3, {}, {}", fmt::join(option, " "), precision));
      std::vector<std::string> overrides = {"train.steps=2", "zero.ranks_per_node=2", precision};
      overrides.insert(overrides.end(), option.begin(), option.end());
      check_planned_equals_measured_cross_node(zm::testing::test_deck(3, 3, 1, overrides), 3,
                                               *comm);
    }
}

}  // namespace
