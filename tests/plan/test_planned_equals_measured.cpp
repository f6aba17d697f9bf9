// What `zeromini plan` predicts for a rank count is what a run at that rank count allocates and
// sends, byte for byte, for every stage, in fp32 and (where the build has bf16) mixed precision,
// also with the fp32 gradient reduction (train.reduce_precision), with and without hybrid sharding
// (zero.shard_size: traffic within and across shard groups compared separately), and with tensor
// parallelism (parallel.tp: the model's collectives along tp compared on their own), and with
// ZeRO++'s quantized weight gathers (zero.quantize_weights) beside hybrid sharding and hpZ, and
// its quantized gradient exchanges (zero.quantize_grads) with and without error feedback. Every
// case also compares the bytes that leave nodes (comm/cross_node.hpp): none on this host's one
// node, and at 4 ranks on two faked nodes of 2 (zero.ranks_per_node) what each stage sends out.
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <cmath>

#include "common/test_watchdog.hpp"
#include "common/zero_test_util.hpp"
#include "core/memory.hpp"
#include "plan/planner.hpp"
#include "plan/run_declarations.hpp"
#include "plan/run_extensions.hpp"
#include "train/throughput.hpp"

namespace {

// The FLOPs the run's throughput report counts per rank are the planner's, and the bytes of each
// timed step (what a bus bandwidth divides) are the planned traffic (all levels).
void check_throughput_counts(const zm::Deck& deck, const zm::PlanPoint& plan, zm::Trainer& trainer,
                             const std::vector<zm::StepRecord>& records, int ranks) {
  zm::StageResult s;
  s.ranks = ranks;
  s.tokens_per_rank_per_step = trainer.tokens_per_rank_per_step();
  s.steps = records;
  s.mean_times.total = 1.0;  // any positive time: the counts do not depend on it
  const zm::Throughput t = zm::measure_throughput(
      s, deck.model, zm::attention_kernels(zm::run_extensions(deck, plan.stage)), {});
  EXPECT_DOUBLE_EQ(t.model_flops_per_step / ranks, plan.model_flops_per_step);
  EXPECT_DOUBLE_EQ(t.hardware_flops_per_step / ranks, plan.flops_per_step);
  EXPECT_DOUBLE_EQ(t.tflops_per_device * 1e12, plan.model_flops_per_step);  // over 1 s
  EXPECT_TRUE(std::isnan(t.mfu));                                           // no peak given
  const size_t first = records.size() >= 2 ? 1 : 0;
  for (int op = 0; op < zm::kCommOps; ++op) {
    double bytes = 0;
    for (size_t i = first; i < records.size(); ++i)
      bytes += records[i].comm.ops[op].bytes / static_cast<double>(records.size() - first);
    EXPECT_NEAR(bytes, plan.bytes_per_step[op], 1e-12 * (1 + plan.bytes_per_step[op]))
        << zm::comm_op_name(zm::CommOp(op));
  }
}

// One deck: the plan against what a trainer allocates and sends in its steps.
void check_planned_equals_measured(const zm::Deck& deck, int stage, zm::Communicator& comm) {
  const zm::ZeroMesh mesh = zm::plan_zero_mesh(deck, stage, comm.size(), nullptr);
  const zm::MemoryPlan planned = zm::plan_memory(deck, stage, mesh);  // priced as it runs
  const zm::LevelTraffic planned_traffic = zm::plan_traffic(deck, stage, mesh);
  const auto planned_cross = zm::plan_cross_node_traffic(deck, stage, mesh);

  zm::MemoryLedger ledger;
  const zm::MemoryFigures before = ledger.figures();
  ledger.reset_peaks();
  const auto trainer_owned =
      zm::make_trainer(deck, stage, comm, zm::RunContext{nullptr, nullptr, &ledger});
  zm::Trainer& trainer = *trainer_owned;
  ASSERT_EQ(trainer.comms().mesh().group_ranks(), mesh.group_ranks());
  ASSERT_EQ(trainer.comms().mesh().tp(), mesh.tp());
  trainer.init_parameters();
  std::vector<zm::StepRecord> records;
  for (int64_t s = 0; s < deck.train.steps; ++s) records.push_back(trainer.step(s));

  for (int c = 0; c < zm::kMemCategories; ++c) {
    SCOPED_TRACE(zm::mem_category_name(zm::MemCategory(c)));
    // Held now, and at the peak of the steps: nothing is allocated beyond the plan.
    EXPECT_EQ(static_cast<double>(ledger.figures().current[c] - before.current[c]),
              planned.bytes[c]);
    EXPECT_EQ(static_cast<double>(ledger.figures().peak[c] - before.current[c]), planned.bytes[c]);
  }
  const auto& intra = planned_traffic[static_cast<size_t>(zm::CommLevel::IntraGroup)];
  const auto& inter = planned_traffic[static_cast<size_t>(zm::CommLevel::InterGroup)];
  const auto& along_tp = planned_traffic[static_cast<size_t>(zm::CommLevel::TensorParallel)];
  double tp_total = 0;
  for (double bytes : along_tp) tp_total += bytes;
  if (mesh.tp() > 1)
    EXPECT_GT(tp_total, 0.0);  // the model's all-reduces
  else
    EXPECT_EQ(tp_total, 0.0);
  double inter_total = 0;
  for (double bytes : inter) inter_total += bytes;
  if (mesh.hybrid() && mesh.world() > 1)
    EXPECT_GT(inter_total, 0.0);  // the replicas' all-reduce and the statistics
  else
    EXPECT_EQ(inter_total, 0.0);
  double cross_total = 0;
  for (double bytes : planned_cross) cross_total += bytes;
  if (mesh.ranks_per_node > 0 && mesh.ranks_per_node < mesh.world())
    EXPECT_GT(cross_total, 0.0);  // the step statistics over every rank, at least
  else
    EXPECT_EQ(cross_total, 0.0);
  for (const auto& record : records)
    for (int op = 0; op < zm::kCommOps; ++op) {
      SCOPED_TRACE(zm::comm_op_name(zm::CommOp(op)));
      const double measured_cross = record.comm_cross_node.ops[op].bytes;
      EXPECT_NEAR(measured_cross, planned_cross[op], 1e-12 * (1 + planned_cross[op]));
      const double measured_inter = record.comm_inter_group.ops[op].bytes;
      const double measured_tp = record.comm_tensor_parallel.ops[op].bytes;
      const double measured_intra = record.comm.ops[op].bytes - measured_inter - measured_tp;
      EXPECT_NEAR(measured_intra, intra[op], 1e-12 * (1 + intra[op]));
      EXPECT_NEAR(measured_inter, inter[op], 1e-12 * (1 + inter[op]));
      EXPECT_NEAR(measured_tp, along_tp[op], 1e-12 * (1 + along_tp[op]));
    }
  // ZeRO-Offload's host-device copies, by direction: bytes and copies (none without offload).
  const zm::PlannedTransfers planned_transfers = zm::run_transfers(deck, stage, mesh);
  for (const auto& record : records)
    for (int d = 0; d < zm::kTransferDirections; ++d) {
      const auto direction = static_cast<zm::TransferDirection>(d);
      SCOPED_TRACE(zm::transfer_direction_name(direction));
      EXPECT_EQ(record.transfers[direction].bytes, planned_transfers.bytes[d]);
      EXPECT_EQ(static_cast<int64_t>(record.transfers[direction].calls),
                planned_transfers.calls[d]);
    }
  check_throughput_counts(deck, zm::plan_point(deck, stage, comm.size(), nullptr), trainer, records,
                          comm.size());
}

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

// Tensor parallelism: every tp that divides the ranks, in each precision, with gradient
// accumulation and recomputation (which sums the recomputed blocks' outputs again), and at 4 ranks
// with tp 2 x two shard groups of one data-parallel rank (hybrid sharding beside tp).
TEST_P(PlannedEqualsMeasured, MemoryAndTrafficWithTensorParallelism) {
  const int stage = GetParam();
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  std::vector<std::vector<std::string>> precisions = {{"train.precision=fp32"}};
  if (ZEROMINI_HAVE_BF16) precisions.push_back({"train.precision=bf16"});
  for (const int tp : {2, 4}) {
    if (N % tp != 0) continue;
    std::vector<std::string> shardings = {"zero.shard_size=0"};
    if (N / tp >= 2) shardings.push_back("zero.shard_size=1");
    for (const auto& sharding : shardings)
      for (const auto& precision : precisions)
        for (const int64_t grad_accum : {1, 2})
          for (const char* recompute : {"none", "blocks"}) {
            SCOPED_TRACE(
                fmt::format("stage {}, {} ranks, tp {}, {}, grad_accum {}, {}, recompute {}", stage,
                            N, tp, sharding, grad_accum, fmt::join(precision, " "), recompute));
            std::vector<std::string> overrides = {"train.steps=2",
                                                  fmt::format("parallel.tp={}", tp), sharding,
                                                  "model.recompute=" + std::string(recompute)};
            overrides.insert(overrides.end(), precision.begin(), precision.end());
            check_planned_equals_measured(zm::testing::test_deck(stage, 3, grad_accum, overrides),
                                          stage, *comm);
          }
  }
}

// The LM head in chunks (model.classifier_chunk): the logits buffer of one chunk, and under
// tensor parallelism one statistics gather per chunk, the last one short (48 tokens in chunks of
// 7), or one chunk of all the tokens; against the whole logits at once (0).
TEST_P(PlannedEqualsMeasured, MemoryAndTrafficWithClassifierChunks) {
  const int stage = GetParam();
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  for (const int tp : {1, 2}) {
    if (N % tp != 0) continue;
    for (const int64_t chunk : {0, 7, 1000}) {
      SCOPED_TRACE(
          fmt::format("stage {}, {} ranks, tp {}, classifier_chunk {}", stage, N, tp, chunk));
      const std::vector<std::string> overrides = {"train.steps=2",
                                                  fmt::format("parallel.tp={}", tp),
                                                  fmt::format("model.classifier_chunk={}", chunk)};
      check_planned_equals_measured(zm::testing::test_deck(stage, 3, 2, overrides), stage, *comm);
    }
  }
}

// qwZ (stage 3): the parameter gathers as packed int8 segments, with the default block and one
// that cuts shards unevenly (7), alone, within shard groups of 2 and under hpZ with groups of 2
// (under bf16 its gather of the updated sub-shards across the groups in int8 too, in two packed
// buffers with overlap and one without), and beside tp 2.
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
  if (N % 2 == 0) shardings.push_back({"parallel.tp=2"});
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
// across the groups (shard groups of 2; hpZ groups of 2 at stage 3, beside int8 weight gathers;
// beside tp 2),
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
    if (N % 2 == 0) shardings.push_back({"parallel.tp=2"});
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
      {"zero.quantize_grads=int4", "zero.shard_size=2"},
      {"parallel.tp=2"}};
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
