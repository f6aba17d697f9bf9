// hpZ (zero.secondary_shard_size, stage 3): the parameters sharded within groups of consecutive
// ranks, the optimizer state over all ranks. It must train the same model as stage 0 at one rank
// with the same global batch (the tolerances of common/equivalence.hpp), every group must end
// with bitwise the same model, each rank holds its share of the model states, and the key is
// refused beside zero.shard_size.
#include <gtest/gtest.h>

#include <fmt/ranges.h>

#include "common/equivalence.hpp"
#include "common/rounded_masters.hpp"
#include "common/test_watchdog.hpp"
#include "core/error.hpp"
#include "core/memory.hpp"

namespace {

using zm::testing::kGlobalBatch;
using zm::testing::largest_difference_from_rank0;

TEST(Hpz, MatchesStageZeroOnOneRank) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  if (N < 2 || kGlobalBatch % N != 0) GTEST_SKIP() << "needs 2 or more ranks dividing 12";
  for (const auto& sharding : zm::testing::group_shardings(N, "zero.secondary_shard_size"))
    for (const int64_t grad_accum : {1, 2}) {
      SCOPED_TRACE(
          fmt::format("{} ranks, {}, grad_accum {}", N, fmt::join(sharding, " "), grad_accum));
      const zm::Deck deck = zm::testing::test_deck(3, kGlobalBatch / N, grad_accum, sharding);
      const zm::testing::TrainedRun run = zm::testing::train(deck, *comm);
      zm::testing::expect_same_training(run, zm::testing::reference(grad_accum));
      EXPECT_EQ(largest_difference_from_rank0(run.params), 0.0f) << "the groups' models differ";
    }
}

// Overlap changes when collectives are waited for, not what they compute.
TEST(Hpz, OverlapOffGivesBitwiseTheSameResult) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  if (N < 2 || kGlobalBatch % N != 0) GTEST_SKIP() << "needs 2 or more ranks dividing 12";
  std::vector<std::string> sharding =
      zm::testing::group_shardings(N, "zero.secondary_shard_size").back();
  const auto with =
      zm::testing::train(zm::testing::test_deck(3, kGlobalBatch / N, 2, sharding), *comm);
  sharding.push_back("zero.overlap=false");
  const auto without =
      zm::testing::train(zm::testing::test_deck(3, kGlobalBatch / N, 2, sharding), *comm);
  EXPECT_EQ(with.losses, without.losses);
  EXPECT_EQ(with.params, without.params);
}

// The parameters (and the gradient shards they are reduced into) in groups of G, Adam's m and v
// over all N ranks.
TEST(Hpz, ParametersInTheGroupOptimizerStateOverAllRanks) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  if (N < 4 || N % 2 != 0) GTEST_SKIP() << "needs an even number of ranks >= 4";
  const int G = N / 2;
  zm::MemoryLedger ledger;
  const zm::MemoryFigures before = ledger.figures();
  const auto trainer = zm::make_trainer(
      zm::testing::test_deck(3, 2, 1, {fmt::format("zero.secondary_shard_size={}", G)}), 3, *comm,
      zm::RunContext{nullptr, nullptr, &ledger});
  ASSERT_TRUE(trainer->comms().mesh().sub_sharded());
  const double padded = static_cast<double>(trainer->partition().padded_total());
  auto held = [&](zm::MemCategory c) {
    const auto i = static_cast<size_t>(c);
    return static_cast<double>(ledger.figures().current[i] - before.current[i]);
  };
  EXPECT_EQ(held(zm::MemCategory::Parameters), 4.0 * padded / G);
  EXPECT_EQ(held(zm::MemCategory::Gradients), 4.0 * padded / G);
  EXPECT_EQ(held(zm::MemCategory::Optimizer), 8.0 * padded / N);
}

#if ZEROMINI_HAVE_BF16
// Mixed precision: the bf16 compute parameters each rank holds are the rounding of the fp32
// masters after every step, the updated sub-shards gathered across the groups; and the run
// follows the one without groups.
TEST(Hpz, MixedPrecisionParametersAreTheRoundedMasters) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  if (N < 4 || N % 2 != 0 || kGlobalBatch % N != 0) GTEST_SKIP() << "needs 4 ranks";
  const zm::Deck plain = zm::testing::test_deck(3, kGlobalBatch / N, 1, {"train.precision=bf16"});
  const zm::Deck deck = zm::testing::test_deck(
      3, kGlobalBatch / N, 1,
      {"train.precision=bf16", fmt::format("zero.secondary_shard_size={}", N / 2)});
  zm::testing::expect_bf16_follows(deck, 3, plain, *comm);
}
#endif

TEST(HpzDeck, ExcludesHybridShardingAndAppliesAtStageThree) {
  const zm::Deck both =
      zm::testing::test_deck(3, 1, 1, {"zero.shard_size=2", "zero.secondary_shard_size=2"});
  try {
    zm::zero_mesh(both, 3, 4, 4);
    FAIL() << "shard_size and secondary_shard_size together were accepted";
  } catch (const zm::Error& e) {
    EXPECT_NE(std::string(e.what()).find("set one of the two"), std::string::npos) << e.what();
  }
  EXPECT_EQ(zm::zero_mesh(both, 2, 4, 4).group_ranks(), 2);  // below stage 3, hpZ does not apply
  const zm::Deck hpz = zm::testing::test_deck(3, 1, 1, {"zero.secondary_shard_size=node"});
  EXPECT_TRUE(zm::zero_mesh(hpz, 3, 16, 8).sub_sharded());
  EXPECT_EQ(zm::zero_mesh(hpz, 3, 16, 8).sub_shards(), 2);
  EXPECT_FALSE(zm::zero_mesh(hpz, 3, 8, 8).sub_sharded());  // one group: plain stage 3
  EXPECT_EQ(describe_zero_mesh(zm::zero_mesh(hpz, 3, 16, 8), hpz),
            "hpZ: parameters in 2 groups of 8 ranks, optimizer state over all 16 ranks "
            "(zero.secondary_shard_size = node)");
  // Written back the way it was given.
  EXPECT_NE(hpz.resolved_toml().find("secondary_shard_size = \"node\""), std::string::npos);
  try {
    zm::zero_mesh(zm::testing::test_deck(3, 1, 1, {"zero.secondary_shard_size=3"}), 3, 4, 4);
    FAIL() << "a secondary shard size of 3 at 4 ranks was accepted";
  } catch (const zm::Error& e) {
    EXPECT_NE(std::string(e.what()).find("zero.secondary_shard_size = 3"), std::string::npos)
        << e.what();
  }
}

}  // namespace
