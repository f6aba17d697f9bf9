// What `zeromini plan` predicts for a rank count is what a run at that rank count allocates and
// sends, byte for byte, for every stage, in fp32 and (where the build has bf16) mixed precision,
// also with the fp32 gradient reduction (train.reduce_precision), with and without hybrid sharding
// (zero.shard_size: traffic within and across shard groups compared separately), and with
// ZeRO++'s quantized weight gathers (zero.quantize_weights) beside hybrid sharding and hpZ, and
// its quantized gradient exchanges (zero.quantize_grads) with and without error feedback. Every
// case also compares the bytes that leave nodes (comm/cross_node.hpp): none on this host's one
// node, and at 4 ranks on two faked nodes of 2 (zero.ranks_per_node) what each stage sends out.
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <cmath>

#include "plan/planned_equals_measured.hpp"

namespace {

using zm_test::check_planned_equals_measured;

class PlannedEqualsMeasured : public ::testing::TestWithParam<int> {};

TEST_P(PlannedEqualsMeasured, MemoryAndTraffic) {
  const int stage = GetParam();
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  std::vector<std::vector<std::string>> precisions = {{"train.precision=fp32"}};
  if (ZEROMINI_HAVE_BF16) precisions.push_back({"train.precision=bf16"});
  if (ZEROMINI_HAVE_BF16)
    precisions.push_back({"train.precision=bf16", "train.reduce_precision=fp32"});
  // Shard groups of 2 ranks (as a number, and as faked nodes of 2) where the ranks make two or
  // more groups.
  std::vector<std::vector<std::string>> shardings = {{"zero.shard_size=0"}};
  if (N >= 4 && N % 2 == 0) {
    shardings.push_back({"zero.shard_size=2"});
    shardings.push_back({"zero.shard_size=node", "zero.ranks_per_node=2"});
    shardings.push_back({"zero.secondary_shard_size=2"});  // hpZ at stage 3, ignored below
  }
  for (const auto& sharding : shardings)
    for (const auto& precision : precisions)
      for (const int64_t grad_accum : {1, 2})
        for (const char* recompute : {"none", "blocks"}) {
          SCOPED_TRACE(fmt::format("stage {}, {} ranks, {}, grad_accum {}, {}, recompute {}", stage,
                                   N, fmt::join(sharding, " "), grad_accum,
                                   fmt::join(precision, " "), recompute));
          std::vector<std::string> overrides = {"train.steps=2",
                                                "model.recompute=" + std::string(recompute)};
          overrides.insert(overrides.end(), precision.begin(), precision.end());
          overrides.insert(overrides.end(), sharding.begin(), sharding.end());
          check_planned_equals_measured(zm::testing::test_deck(stage, 3, grad_accum, overrides),
                                        stage, *comm);
        }
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
    if (stage == 3)
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

// The LM head in chunks (model.classifier_chunk): the logits buffer of one chunk, the last one
// short (48 tokens in chunks of 7), or one chunk of all the tokens; against the whole logits at
// once (0).
TEST_P(PlannedEqualsMeasured, MemoryAndTrafficWithClassifierChunks) {
  const int stage = GetParam();
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  for (const int64_t chunk : {0, 7, 1000}) {
    SCOPED_TRACE(fmt::format("stage {}, {} ranks, classifier_chunk {}", stage, N, chunk));
    const std::vector<std::string> overrides = {"train.steps=2",
                                                fmt::format("model.classifier_chunk={}", chunk)};
    check_planned_equals_measured(zm::testing::test_deck(stage, 3, 2, overrides), stage, *comm);
  }
}

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
// of its node, plain and under each sharding and ZeRO++ option that changes which communicators
// span the nodes and what they move. Plain qgZ (one group of 4 over both nodes) takes its two hops
// by node: the all-to-all within each node and the one across, in int8 and int4, with error
// feedback too.
TEST(PlannedEqualsMeasuredCrossNode, TwoNodesOfTwoRanks) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  if (comm->size() != 4) GTEST_SKIP() << "4 ranks on two nodes of 2";
  std::vector<std::string> precisions = {"train.precision=fp32"};
  if (ZEROMINI_HAVE_BF16) precisions.push_back("train.precision=bf16");
  const std::vector<std::vector<std::string>> options = {
      {},
      {"zero.shard_size=2"},
      {"zero.secondary_shard_size=2"},  // hpZ at stage 3, ignored below
      {"zero.quantize_grads=int8"},
      {"zero.quantize_grads=int4"},
      {"zero.quantize_grads=int8", "zero.error_feedback=true", "zero.quantize_block=10"},
      {"zero.quantize_grads=int4", "zero.shard_size=2"}};
  for (int stage = 1; stage <= 3; ++stage)
    for (const auto& option : options)
      for (const auto& precision : precisions) {
        SCOPED_TRACE(fmt::format("stage {}, {}, {}", stage, fmt::join(option, " "), precision));
        std::vector<std::string> overrides = {"train.steps=2", "zero.ranks_per_node=2", precision};
        overrides.insert(overrides.end(), option.begin(), option.end());
        check_planned_equals_measured(zm::testing::test_deck(stage, 3, 1, overrides), stage, *comm);
      }
  // Stage 3's ZeRO++: qwZ alone, and with hpZ and qgZ (int4, groups of a node).
  const std::vector<std::vector<std::string>> zeropp = {
      {"zero.quantize_weights=int8"},
      {"zero.quantize_weights=int8", "zero.secondary_shard_size=2", "zero.quantize_grads=int4"}};
  for (const auto& option : zeropp)
    for (const auto& precision : precisions) {
      SCOPED_TRACE(fmt::format("stage 3, {}, {}", fmt::join(option, " "), precision));
      std::vector<std::string> overrides = {"train.steps=2", "zero.ranks_per_node=2", precision};
      overrides.insert(overrides.end(), option.begin(), option.end());
      check_planned_equals_measured(zm::testing::test_deck(3, 3, 1, overrides), 3, *comm);
    }
}

INSTANTIATE_TEST_SUITE_P(Stages, PlannedEqualsMeasured, ::testing::Values(0, 1, 2, 3));

}  // namespace
