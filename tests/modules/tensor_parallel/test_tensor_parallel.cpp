// Tensor parallelism x ZeRO trains the same model as one rank: at tp 2 x dp 2 and tp 4 x dp 1
// (4 ranks; tp 2 x dp 1 at 2), every stage, 10 steps, against stage 0 at one rank with the same
// global batch.
//
// The bound. The tp split changes only the order of summation: a row-parallel projection's
// output is the sum over tp ranks of partial products (each over C/tp or 4C/tp inputs) instead of
// one sum over all inputs, and the column-parallel layers' input gradients likewise; the
// vocabulary-parallel loss combines per-slice log-sum-exps. Each such reordering changes an fp32
// result in its last bits (relative ~1e-7 per sum); over 10 steps of training with lr 1e-2 the
// losses stay within the same 1e-5 relative bound as the data-parallel equivalence tests, and the
// parameters within their 1e-5 absolute bound (common/equivalence.hpp argues both).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "common/equivalence.hpp"
#include "common/test_watchdog.hpp"
#include "core/error.hpp"
#include "core/modules.hpp"
#include "core/validate.hpp"
#include "plan/planner.hpp"

namespace {

using zm::testing::expect_same_training;
using zm::testing::kGlobalBatch;

constexpr int64_t kSteps = 10;

std::vector<std::string> with_steps(std::vector<std::string> overrides) {
  overrides.push_back(fmt::format("train.steps={}", kSteps));
  return overrides;
}

const zm::testing::TrainedRun& one_rank_reference() {
  static const zm::testing::TrainedRun run = [] {
    auto self = zm::make_communicator("mpi", MPI_COMM_SELF, zm::testing::watchdog());
    return zm::testing::train(zm::testing::test_deck(0, kGlobalBatch, 1, with_steps({})), *self);
  }();
  return run;
}

// The tensor-parallel degrees that divide the ranks (and leave data-parallel ranks that divide
// the global batch).
std::vector<int> tp_degrees(int ranks) {
  std::vector<int> out;
  for (int tp : {2, 4})
    if (ranks % tp == 0 && kGlobalBatch % (ranks / tp) == 0) out.push_back(tp);
  return out;
}

class TensorParallel : public ::testing::TestWithParam<int> {};

TEST_P(TensorParallel, MatchesStageZeroOnOneRank) {
  const int stage = GetParam();
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  if (tp_degrees(N).empty()) GTEST_SKIP() << "no tensor-parallel degree divides " << N;
  for (const int tp : tp_degrees(N)) {
    SCOPED_TRACE(fmt::format("tp {} x dp {}, stage {}", tp, N / tp, stage));
    const int64_t dp = N / tp;
    const zm::Deck deck = zm::testing::test_deck(stage, kGlobalBatch / dp, 1,
                                                 with_steps({fmt::format("parallel.tp={}", tp)}));
    expect_same_training(zm::testing::train(deck, *comm), one_rank_reference());
  }
}

// Recomputation, gradient accumulation and hybrid sharding beside tp: the same training.
TEST_P(TensorParallel, WithRecomputeAccumulationAndShardGroups) {
  const int stage = GetParam();
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  if (N % 2 != 0) GTEST_SKIP() << "tp 2 needs an even rank count";
  const int64_t dp = N / 2;
  // Two micro-steps of half the batch each: the same global batch as the reference.
  if (kGlobalBatch % (2 * dp) != 0) GTEST_SKIP() << "batch not divisible";
  std::vector<std::string> overrides = {"parallel.tp=2", "model.recompute=blocks"};
  if (dp >= 2) overrides.push_back("zero.shard_size=1");  // one data-parallel rank per group
  const zm::Deck deck =
      zm::testing::test_deck(stage, kGlobalBatch / dp / 2, 2, with_steps(overrides));
  expect_same_training(zm::testing::train(deck, *comm), one_rank_reference());
}

// The chunked LM head: one statistics gather per chunk, each slice's part of d(lnf) summed once;
// the same training as the whole logits and as one rank.
TEST_P(TensorParallel, ChunkedHeadTrainsAsTheReference) {
  const int stage = GetParam();
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  if (N % 2 != 0 || kGlobalBatch % (N / 2) != 0) GTEST_SKIP() << "tp 2 needs an even rank count";
  const int64_t micro = kGlobalBatch / (N / 2);
  const auto whole = zm::testing::train(
      zm::testing::test_deck(stage, micro, 2, {"parallel.tp=2", "model.classifier_chunk=0"}),
      *comm);
  const auto chunked = zm::testing::train(
      zm::testing::test_deck(stage, micro, 2, {"parallel.tp=2", "model.classifier_chunk=37"}),
      *comm);
  {
    SCOPED_TRACE("against the whole logits, same stage and mesh");
    expect_same_training(chunked, whole);
  }
  SCOPED_TRACE("against one rank, stage 0");
  expect_same_training(chunked, zm::testing::reference(2));
}

// ZeRO-Offload beside tp (the optimizer state, and at stage 3 the parameter shard, on the host):
// the same model bit for bit, at the stages that offload (1-3).
class TensorParallelOffload : public ::testing::TestWithParam<int> {};

TEST_P(TensorParallelOffload, ChangesNothing) {
  const int stage = GetParam();
  const zm::ModuleInfo* offload_module = zm::module_of_key("zero.offload_optimizer");
  if (offload_module != nullptr && !offload_module->built) GTEST_SKIP() << "no offload";
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  if (N % 2 != 0 || kGlobalBatch % N != 0) GTEST_SKIP() << "tp 2 needs an even rank count";
  std::vector<std::string> with = {"parallel.tp=2", "zero.offload_optimizer=host"};
  if (stage == 3) with.push_back("zero.offload_params=host");
  const auto plain = zm::testing::train(
      zm::testing::test_deck(stage, kGlobalBatch / N, 1, {"parallel.tp=2"}), *comm);
  const zm::Deck offloaded_deck = zm::testing::test_deck(stage, kGlobalBatch / N, 1, with);
  const auto offloaded = zm::testing::train(offloaded_deck, *comm);
  // Offload applies: the run keeps state in host memory (the offload module's tests check its
  // copies).
  EXPECT_GT(
      zm::plan_memory(offloaded_deck, stage, zm::plan_zero_mesh(offloaded_deck, stage, N, nullptr))
          .host(),
      0.0);
  EXPECT_EQ(offloaded.losses, plain.losses);
  EXPECT_EQ(offloaded.params, plain.params);
}

INSTANTIATE_TEST_SUITE_P(Stages, TensorParallel, ::testing::Values(0, 1, 2, 3));
INSTANTIATE_TEST_SUITE_P(Stages, TensorParallelOffload, ::testing::Values(1, 2, 3));

// The deck's checks name the key and what tp must divide.
TEST(TensorParallelDeck, RejectsDegreesThatDoNotDivide) {
  EXPECT_THROW(zm::testing::test_deck(0, 1, 1, {"parallel.tp=3"}), zm::Error);  // 4 heads
  EXPECT_THROW(zm::testing::test_deck(0, 1, 1, {"parallel.tp=8"}), zm::Error);  // 4 heads
  try {
    zm::testing::test_deck(0, 1, 1, {"parallel.tp=3"});
  } catch (const zm::Error& e) {
    EXPECT_NE(std::string(e.what()).find("parallel.tp = 3 must divide model.heads = 4"),
              std::string::npos)
        << e.what();
  }
}

// The mesh's check: tp divides the ranks (each tensor-parallel group is tp consecutive ranks).
TEST(TensorParallelDeck, RefusesARankCountTpDoesNotDivide) {
  const zm::Deck tp = zm::testing::test_deck(1, 1, 1, {"parallel.tp=2"});
  try {
    zm::validate(tp, {1, 3, 3});
    ADD_FAILURE() << "tp 2 on 3 ranks was not refused";
  } catch (const zm::Error& e) {
    EXPECT_NE(std::string(e.what()).find("--set parallel.tp=2: parallel.tp = 2: expected a "
                                         "divisor of the rank count 3 (each tensor-parallel "
                                         "group is 2 consecutive ranks)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
