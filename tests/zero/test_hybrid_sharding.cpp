// Hybrid sharding (zero.shard_size): stages 1-3 shard within groups of consecutive ranks and
// replicate across the groups (the secondary partition of stage 3: tests/modules/zeropp/
// test_hpz.cpp). They must train the same model as stage 0 at one
// rank with the same global batch (the tolerances of test_zero_equivalence,
// common/equivalence.hpp), every group must end with bitwise the same model, and each rank holds
// its share of the model states.
#include <gtest/gtest.h>

#include <fmt/ranges.h>

#include <cmath>

#include "common/equivalence.hpp"
#include "common/rounded_masters.hpp"
#include "common/test_watchdog.hpp"
#include "core/error.hpp"
#include "core/memory.hpp"
#include "plan/planner.hpp"

namespace {

using zm::testing::kGlobalBatch;
using zm::testing::largest_difference_from_rank0;

class HybridSharding : public ::testing::TestWithParam<int> {};

TEST_P(HybridSharding, MatchesStageZeroOnOneRank) {
  const int stage = GetParam();
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  if (N < 2 || kGlobalBatch % N != 0) GTEST_SKIP() << "needs 2 or more ranks dividing 12";
  for (const auto& sharding : zm::testing::group_shardings(N, "zero.shard_size"))
    for (const int64_t grad_accum : {1, 2}) {
      SCOPED_TRACE(
          fmt::format("{} ranks, {}, grad_accum {}", N, fmt::join(sharding, " "), grad_accum));
      const zm::Deck deck = zm::testing::test_deck(stage, kGlobalBatch / N, grad_accum, sharding);
      const zm::testing::TrainedRun run = zm::testing::train(deck, *comm);
      zm::testing::expect_same_training(run, zm::testing::reference(grad_accum));
      EXPECT_EQ(largest_difference_from_rank0(run.params), 0.0f) << "the groups' models differ";
    }
}

// Overlap changes when collectives are waited for, not what they compute.
TEST_P(HybridSharding, OverlapOffGivesBitwiseTheSameResult) {
  const int stage = GetParam();
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  if (N < 2 || kGlobalBatch % N != 0) GTEST_SKIP() << "needs 2 or more ranks dividing 12";
  std::vector<std::string> sharding = zm::testing::group_shardings(N, "zero.shard_size").back();
  const auto with =
      zm::testing::train(zm::testing::test_deck(stage, kGlobalBatch / N, 2, sharding), *comm);
  sharding.push_back("zero.overlap=false");
  const auto without =
      zm::testing::train(zm::testing::test_deck(stage, kGlobalBatch / N, 2, sharding), *comm);
  EXPECT_EQ(with.losses, without.losses);
  EXPECT_EQ(with.params, without.params);
}

// Each rank holds its share of one group's copy: the model states of stage s over G ranks of N
// are those of stage s on G ranks alone, byte for byte, and stage 3's parameters are 1/G of the
// padded model.
TEST_P(HybridSharding, EachGroupHoldsItsShareOfTheModelStates) {
  const int stage = GetParam();
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  if (N < 4 || N % 2 != 0) GTEST_SKIP() << "needs an even number of ranks >= 4";
  const int G = N / 2;
  const zm::Deck deck = zm::testing::test_deck(stage, 2, 1, {fmt::format("zero.shard_size={}", G)});
  zm::MemoryLedger ledger;
  const zm::MemoryFigures before = ledger.figures();
  const auto trainer =
      zm::make_trainer(deck, stage, *comm, zm::RunContext{nullptr, nullptr, &ledger});
  ASSERT_EQ(trainer->comms().mesh().groups(), 2);
  ASSERT_EQ(trainer->partition().ranks(), G);
  const zm::Deck plain = zm::testing::test_deck(stage, 2);
  const zm::MemoryPlan on_g_ranks = zm::plan_memory(plain, stage, zm::hybrid_mesh(G, G, false));
  for (zm::MemCategory c :
       {zm::MemCategory::Parameters, zm::MemCategory::Gradients, zm::MemCategory::Optimizer}) {
    SCOPED_TRACE(zm::mem_category_name(c));
    const auto i = static_cast<size_t>(c);
    EXPECT_EQ(static_cast<double>(ledger.figures().current[i] - before.current[i]),
              on_g_ranks.bytes[i]);
  }
  const double padded = static_cast<double>(trainer->partition().padded_total());
  const auto optimizer = static_cast<size_t>(zm::MemCategory::Optimizer);
  EXPECT_EQ(static_cast<double>(ledger.figures().current[optimizer] - before.current[optimizer]),
            8.0 * padded / G);
}

INSTANTIATE_TEST_SUITE_P(Stages, HybridSharding, ::testing::Values(1, 2, 3));

#if ZEROMINI_HAVE_BF16
// Mixed precision: the bf16 compute parameters each rank holds are the rounding of the fp32
// masters after every step when the stage gathers them in the group; and the run follows the one
// without groups.
TEST(HybridMixedPrecision, ParametersAreTheRoundedMastersAndTrainingFollows) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  if (N < 4 || N % 2 != 0 || kGlobalBatch % N != 0) GTEST_SKIP() << "needs 4 ranks";
  const struct {
    int stage;
    const char* key;
  } cases[] = {{1, "zero.shard_size"}, {3, "zero.shard_size"}};
  for (const auto& [stage, key] : cases) {
    SCOPED_TRACE(fmt::format("stage {}, {} = {}", stage, key, N / 2));
    const zm::Deck plain =
        zm::testing::test_deck(stage, kGlobalBatch / N, 1, {"train.precision=bf16"});
    const zm::Deck deck = zm::testing::test_deck(
        stage, kGlobalBatch / N, 1, {"train.precision=bf16", fmt::format("{}={}", key, N / 2)});
    zm::testing::expect_bf16_follows(deck, stage, plain, *comm);
  }
}
#endif

std::string error_of(const std::string& text) {
  try {
    zm::parse_deck(text, "bad.toml");
  } catch (const zm::Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(HybridShardingDeck, ShardSizeIsACountOrNode) {
  EXPECT_EQ(zm::parse_deck("[zero]\nshard_size = 4\n", "d.toml").zero.shard_size, 4);
  EXPECT_EQ(zm::parse_deck("[zero]\nshard_size = \"node\"\n", "d.toml").zero.shard_size,
            zm::kShardSizeNode);
  EXPECT_EQ(zm::parse_deck("", "d.toml", {"zero.shard_size=node"}).zero.shard_size,
            zm::kShardSizeNode);
  EXPECT_EQ(zm::parse_deck("", "d.toml").zero.shard_size, 0);  // all ranks
  // Written back the way it was given.
  EXPECT_NE(zm::parse_deck("[zero]\nshard_size = \"node\"\n", "d.toml")
                .resolved_toml()
                .find("shard_size = \"node\""),
            std::string::npos);
  EXPECT_EQ(error_of("[zero]\nshard_size = \"nodes\"\n"),
            "bad.toml:2:1: zero.shard_size = \"nodes\": expected an integer >= 0 "
            "or \"node\"");
  EXPECT_EQ(error_of("[zero]\nshard_size = -2\n"),
            "bad.toml:2:1: zero.shard_size = -2: out of range: expected an integer >= 0"
            " or \"node\"");
  EXPECT_EQ(error_of("[zero]\nshard_size = 1.5\n"),
            "bad.toml:2:1: zero.shard_size = 1.5: expected an integer >= 0 or "
            "\"node\", found a floating-point number");
}

// Bad shard sizes are refused with the key and what was expected.
TEST(HybridShardingDeck, ShardSizeMustDivideTheRanks) {
  const zm::Deck deck = zm::testing::test_deck(3, 1, 1, {"zero.shard_size=3"});
  try {
    zm::zero_mesh(deck, 3, 4, 4);
    FAIL() << "a shard size of 3 at 4 ranks was accepted";
  } catch (const zm::Error& e) {
    EXPECT_NE(std::string(e.what()).find("zero.shard_size = 3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("divisor of the rank count 4"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(zm::zero_mesh(deck, 0, 4, 4).group_ranks(), 4);  // stage 0 shards nothing
  const zm::Deck node = zm::testing::test_deck(3, 1, 1, {"zero.shard_size=node"});
  EXPECT_EQ(zm::zero_mesh(node, 3, 16, 8).group_ranks(), 8);
  EXPECT_EQ(zm::zero_mesh(node, 3, 4, 8).group_ranks(), 4);  // one node, not full
}

}  // namespace
