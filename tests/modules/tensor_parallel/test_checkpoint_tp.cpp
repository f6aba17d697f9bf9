// Checkpoints across tensor-parallel degrees: a checkpoint holds the whole model (the tp = 1
// layout) whatever parallel.tp wrote it, so one written at tp 2 x dp 2 resumes at tp 1 x dp 4 and
// at tp 4 x dp 1 at every stage.
#include <gtest/gtest.h>

#include <cmath>

#include "tp_checkpoint_util.hpp"

namespace {

using zm::testing::deck_for;
using zm::testing::reference_run;
using zm::testing::run_steps;
using zm::testing::shared_dir;
using zm::testing::State;
using zm::testing::whole_state;

// Sequences per optimizer step in every layout: micro_batch x data-parallel ranks.
constexpr int64_t kTpGlobalBatch = 4;

zm::Deck tp_deck(int stage, int tp, const std::string& dir, int world) {
  return deck_for(stage, kTpGlobalBatch / (world / tp), dir, 8, "fp32",
                  {fmt::format("parallel.tp={}", tp)});
}

// Steps 0-4 at tp 2 x dp 2 and a checkpoint; returns its path and the whole state it holds.
std::string write_at_tp2(int stage, const std::string& dir, zm::Communicator& world,
                         State& written) {
  const auto writer = zm::make_trainer(tp_deck(stage, 2, dir, world.size()), stage, world);
  EXPECT_EQ(writer->engine().mesh().model_parallel(), 2);
  writer->init_parameters();
  run_steps(*writer, 0, 4);
  const std::string path = zm::write_checkpoint(writer->engine(), writer->deck(), 4).path;
  written = whole_state(writer->engine());
  return path;
}

// The steps after the checkpoint at another tp degree against the unsharded run's. Every layout
// starts from the same values (a bitwise check of the state first) and sees the same sequences;
// in fp32 only the order of the sums differs (the data-parallel gradient reduction, the
// row-parallel all-reduce over tp, the vocabulary-parallel softmax's partial sums). Each order
// changes a sum by a few ulps (1e-7 relative); four Adam steps at lr 1e-2 carry that into the
// loss at about that size (1.1e-7 measured for the tp layouts against one rank), so 1e-5 holds
// it with two orders of magnitude to spare, while a single misplaced row or column of any tensor
// moves the loss by far more.
TEST(CheckpointTp, ResumesAtOtherTpDegreesAtEveryStage) {
  auto world = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  if (world->size() != 4) GTEST_SKIP() << "needs 4 ranks";
  const std::string dir = shared_dir(MPI_COMM_WORLD, "tp-reshard");
  const std::vector<double> unsharded = reference_run(dir, kTpGlobalBatch).losses;
  for (int stage = 0; stage <= 3; ++stage) {
    State written;
    const std::string path =
        write_at_tp2(stage, fmt::format("{}/tp2-stage{}", dir, stage), *world, written);
    for (int tp : {1, 4}) {
      SCOPED_TRACE(fmt::format("written at tp 2 x dp 2, stage {}; read at tp {} x dp {}", stage, tp,
                               4 / tp));
      const auto reader = zm::make_trainer(tp_deck(stage, tp, dir + "/reader", 4), stage, *world);
      ASSERT_EQ(reader->engine().mesh().model_parallel(), tp);
      EXPECT_EQ(zm::load_checkpoint(reader->engine(), reader->deck(), path), 4);
      EXPECT_TRUE(whole_state(reader->engine()) == written) << "loaded state differs bitwise";
      const std::vector<double> losses = run_steps(*reader, 4, 8);
      for (size_t i = 0; i < losses.size(); ++i)
        EXPECT_NEAR(losses[i], unsharded[4 + i], 1e-5 * unsharded[4 + i]) << "step " << 4 + i;
    }
  }
}

// Hybrid sharding and hpZ at tp 2: tp 2 x dp 2 in two shard groups of one rank (stage 3; under
// hpZ the optimizer state is sharded over both, each rank writing its sub-shard), read at tp 1 x
// dp 4 in one group (stage 1) and at tp 4 x dp 1 (stage 2): the state bitwise, the losses as above.
TEST(CheckpointTp, HybridAndHpzCheckpointsReshardAcrossTp) {
  auto world = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  if (world->size() != 4) GTEST_SKIP() << "needs 4 ranks";
  const std::string dir = shared_dir(MPI_COMM_WORLD, "tp-hybrid");
  const std::vector<double> unsharded = reference_run(dir, kTpGlobalBatch).losses;
  const char* const shardings[] = {"zero.shard_size=1", "zero.secondary_shard_size=1"};
  // hpZ where its module (zeropp) is built.
  const int cases = zm::testing::key_built("zero.secondary_shard_size") ? 2 : 1;
  for (int k = 0; k < cases; ++k) {
    const char* sharding = shardings[k];
    const zm::Deck deck = deck_for(3, kTpGlobalBatch / 2, fmt::format("{}/writer{}", dir, k), 8,
                                   "fp32", {"parallel.tp=2", sharding});
    const auto writer = zm::make_trainer(deck, 3, *world);
    ASSERT_EQ(writer->engine().mesh().groups(), 2);
    writer->init_parameters();
    run_steps(*writer, 0, 4);
    const std::string path = zm::write_checkpoint(writer->engine(), writer->deck(), 4).path;
    const State written = whole_state(writer->engine());
    for (const auto& [tp, stage] : {std::pair<int, int>{1, 1}, {4, 2}}) {
      SCOPED_TRACE(fmt::format("{}; read at tp {}, stage {}", sharding, tp, stage));
      const auto reader = zm::make_trainer(tp_deck(stage, tp, dir + "/reader", 4), stage, *world);
      EXPECT_EQ(zm::load_checkpoint(reader->engine(), reader->deck(), path), 4);
      EXPECT_TRUE(whole_state(reader->engine()) == written) << "loaded state differs bitwise";
      const std::vector<double> losses = run_steps(*reader, 4, 8);
      for (size_t i = 0; i < losses.size(); ++i)
        EXPECT_NEAR(losses[i], unsharded[4 + i], 1e-5 * unsharded[4 + i]) << "step " << 4 + i;
    }
  }
}

#if ZEROMINI_HAVE_BF16
// Under bf16 the checkpoint holds the fp32 masters (in the optimizer's storage from stage 1): a
// tp 2 x dp 2 one at stage 1 is read bit for bit at tp 1 x dp 4 (stage 3) and tp 4 x dp 1 (stage
// 0), and the resumed runs go on (their losses finite; bf16 runs of different layouts are not
// compared to 1e-5).
TEST(CheckpointTp, MixedPrecisionMastersReshardAcrossTp) {
  auto world = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  if (world->size() != 4) GTEST_SKIP() << "needs 4 ranks";
  const std::string dir = shared_dir(MPI_COMM_WORLD, "tp-bf16");
  auto bf16_deck = [&](int stage, int tp, const std::string& out) {
    return deck_for(stage, kTpGlobalBatch / (4 / tp), out, 8, "bf16",
                    {fmt::format("parallel.tp={}", tp)});
  };
  const auto writer = zm::make_trainer(bf16_deck(1, 2, dir + "/writer"), 1, *world);
  writer->init_parameters();
  run_steps(*writer, 0, 4);
  const std::string path = zm::write_checkpoint(writer->engine(), writer->deck(), 4).path;
  const State written = whole_state(writer->engine());
  for (const auto& [tp, stage] : {std::pair<int, int>{1, 3}, {4, 0}}) {
    SCOPED_TRACE(fmt::format("bf16, read at tp {}, stage {}", tp, stage));
    const auto reader = zm::make_trainer(bf16_deck(stage, tp, dir + "/reader"), stage, *world);
    EXPECT_EQ(zm::load_checkpoint(reader->engine(), reader->deck(), path), 4);
    EXPECT_TRUE(whole_state(reader->engine()) == written) << "loaded masters differ bitwise";
    for (double loss : run_steps(*reader, 4, 8)) EXPECT_TRUE(std::isfinite(loss));
  }
}
#endif

}  // namespace
