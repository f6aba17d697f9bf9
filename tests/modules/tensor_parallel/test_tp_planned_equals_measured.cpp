// Under tensor parallelism what `zeromini plan` predicts is what a run allocates and sends, byte
// for byte (tests/common/planned_equals_measured.hpp): the model's collectives along tp compared on
// their own (level model_parallel), at every tp that divides the ranks, in each precision, with
// gradient accumulation and recomputation (which sums the recomputed blocks' outputs again), with
// tp 2 x two shard groups of one data-parallel rank (hybrid sharding beside tp), with the LM head
// in chunks (one statistics gather per chunk, the last one short), and beside ZeRO++'s quantized
// gathers and exchanges and on two faked nodes of 2 ranks where the build has ZeRO++.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "common/planned_equals_measured.hpp"
#include "core/modules.hpp"

namespace {

using zm::testing::check_planned_equals_measured;

// Whether the build has the module owning `key` (a core key: always).
bool has_key(const char* key) {
  const zm::ModuleInfo* module = zm::module_of_key(key);
  return module == nullptr || module->built;
}

class TpPlannedEqualsMeasured : public ::testing::TestWithParam<int> {};

TEST_P(TpPlannedEqualsMeasured, MemoryAndTraffic) {
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

TEST_P(TpPlannedEqualsMeasured, WithClassifierChunks) {
  const int stage = GetParam();
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  if (N % 2 != 0) GTEST_SKIP() << "tp 2 needs an even rank count";
  for (const int64_t chunk : {0, 7, 1000}) {
    SCOPED_TRACE(fmt::format("stage {}, {} ranks, tp 2, classifier_chunk {}", stage, N, chunk));
    const std::vector<std::string> overrides = {"train.steps=2", "parallel.tp=2",
                                                fmt::format("model.classifier_chunk={}", chunk)};
    check_planned_equals_measured(zm::testing::test_deck(stage, 3, 2, overrides), stage, *comm);
  }
}

INSTANTIATE_TEST_SUITE_P(Stages, TpPlannedEqualsMeasured, ::testing::Values(0, 1, 2, 3));

// Beside ZeRO++: qwZ's int8 gathers (stage 3) and qgZ's exchanges (stages 1-3) at tp 2.
TEST(TpPlannedEqualsMeasuredQuantized, BesideZeroppCompression) {
  if (!has_key("zero.quantize_grads")) GTEST_SKIP() << "no ZeRO++ in this build";
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  if (N % 2 != 0) GTEST_SKIP() << "tp 2 needs an even rank count";
  std::vector<std::string> precisions = {"train.precision=fp32"};
  if (ZEROMINI_HAVE_BF16) precisions.push_back("train.precision=bf16");
  for (const auto& precision : precisions)
    for (const int64_t grad_accum : {1, 2})
      for (const char* block : {"2048", "7"}) {
        SCOPED_TRACE(fmt::format("qwZ, {} ranks, grad_accum {}, {}, block {}", N, grad_accum,
                                 precision, block));
        check_planned_equals_measured(
            zm::testing::test_deck(3, 3, grad_accum,
                                   {"train.steps=2", "parallel.tp=2", "zero.quantize_weights=int8",
                                    std::string("zero.quantize_block=") + block, precision}),
            3, *comm);
      }
  for (int stage = 1; stage <= 3; ++stage)
    for (const char* bits : {"int8", "int4"})
      for (const char* feedback : {"false", "true"})
        for (const auto& precision : precisions)
          for (const int64_t grad_accum : {1, 2}) {
            SCOPED_TRACE(
                fmt::format("qgZ, stage {}, {} ranks, {}, error_feedback {}, {}, "
                            "grad_accum {}",
                            stage, N, bits, feedback, precision, grad_accum));
            check_planned_equals_measured(
                zm::testing::test_deck(
                    stage, 3, grad_accum,
                    {"train.steps=2", "parallel.tp=2", std::string("zero.quantize_grads=") + bits,
                     std::string("zero.error_feedback=") + feedback, "zero.quantize_block=10",
                     precision}),
                stage, *comm);
          }
}

// Two faked nodes of 2 ranks (zero.ranks_per_node = 2) at 4 ranks with tp 2 (a tp group within
// each node, the shard groups across them); the bytes out of the node: tests/modules/zeropp/.
TEST(TpPlannedEqualsMeasuredCrossNode, TwoNodesOfTwoRanks) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  if (comm->size() != 4) GTEST_SKIP() << "4 ranks on two nodes of 2";
  std::vector<std::string> precisions = {"train.precision=fp32"};
  if (ZEROMINI_HAVE_BF16) precisions.push_back("train.precision=bf16");
  for (int stage = 1; stage <= 3; ++stage)
    for (const auto& precision : precisions) {
      SCOPED_TRACE(fmt::format("stage {}, tp 2, {}", stage, precision));
      check_planned_equals_measured(
          zm::testing::test_deck(
              stage, 3, 1, {"train.steps=2", "zero.ranks_per_node=2", "parallel.tp=2", precision}),
          stage, *comm);
    }
}

}  // namespace
