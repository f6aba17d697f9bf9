// Checkpoints under hybrid sharding (zero.shard_size): every unit is stored whole whatever the
// shard groups, so a checkpoint reshards across shard sizes as it does across rank counts and
// stages, and a hybrid run resumes exactly.
#include <gtest/gtest.h>
#include <hdf5.h>

#include "common/checkpoint_test_util.hpp"
#include "io/checkpoint.hpp"

namespace {

using zm::testing::deck_for;
using zm::testing::full_state;
using zm::testing::run_steps;
using zm::testing::shared_dir;
using zm::testing::State;

int64_t shard_size_written(const std::string& path) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t attr = H5Aopen(file, "shard_size", H5P_DEFAULT);
  int64_t value = -1;
  H5Aread(attr, H5T_NATIVE_INT64, &value);
  H5Aclose(attr);
  H5Fclose(file);
  return value;
}

// Written at 4 ranks in shard groups of 2 at stage 3 (`sharding`: hybrid or hpZ); read back at 3
// ranks, stage 1, one group (the case), at 4 ranks, stage 2, one group, and at 2 ranks,
// stage 3, groups of 1.
void check_reshard_from(const std::string& sharding, zm::Communicator& world_comm) {
  zm::Communicator* world = &world_comm;
  const std::string dir = shared_dir(MPI_COMM_WORLD, "hybrid-reshard");
  const int64_t global_batch = 12;
  const zm::Deck written_deck = deck_for(3, global_batch / 4, dir, 8, "fp32", {sharding});
  const auto writer = zm::make_trainer(written_deck, 3, *world);
  ASSERT_EQ(writer->comms().layout().groups(), 2);
  writer->init_parameters();
  run_steps(*writer, 0, 4);
  const std::string path = zm::write_checkpoint(writer->engine(), writer->deck(), 4);
  EXPECT_EQ(shard_size_written(path), 2);
  const State written = full_state(writer->engine());
  const std::vector<double> continued = run_steps(*writer, 4, 8);  // the uninterrupted run

  const struct { int ranks, stage, shard_size; } targets[] = {{3, 1, 0}, {4, 2, 0}, {2, 3, 1}};
  for (const auto& target : targets) {
    SCOPED_TRACE(fmt::format("{} ranks, stage {}, shard_size {}", target.ranks, target.stage,
                             target.shard_size));
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, world->rank() < target.ranks ? 0 : MPI_UNDEFINED, world->rank(),
                   &sub);
    if (sub == MPI_COMM_NULL) continue;
    {
      auto comm = zm::make_communicator("mpi", sub);
      const zm::Deck deck = deck_for(target.stage, global_batch / target.ranks, dir, 8, "fp32",
                                     {fmt::format("zero.shard_size={}", target.shard_size)});
      const auto reader = zm::make_trainer(deck, target.stage, *comm);
      EXPECT_EQ(zm::load_checkpoint(reader->engine(), reader->deck(), path), 4);
      EXPECT_TRUE(full_state(reader->engine()) == written) << "loaded state differs bitwise";
      const std::vector<double> losses = run_steps(*reader, 4, 8);
      // Same data and state; only the reduction order differs (see test_zero_equivalence).
      for (size_t i = 0; i < losses.size(); ++i)
        EXPECT_NEAR(losses[i], continued[i], 1e-5 * continued[i]) << "step " << 4 + i;
    }
    MPI_Comm_free(&sub);
  }
}

TEST(CheckpointHybrid, ReshardsAcrossShardSizes) {
  auto world = zm::make_communicator("mpi", MPI_COMM_WORLD);
  if (world->size() != 4) GTEST_SKIP() << "needs 4 ranks";
  check_reshard_from("zero.shard_size=2", *world);
}

// hpZ's optimizer state is written by every rank (each holds a sub-shard only it has).
TEST(CheckpointHybrid, HpzCheckpointsReshardToo) {
  auto world = zm::make_communicator("mpi", MPI_COMM_WORLD);
  if (world->size() != 4) GTEST_SKIP() << "needs 4 ranks";
  check_reshard_from("zero.secondary_shard_size=2", *world);
}

// Steps 0-8 of one run of the given layout against steps 0-4, a checkpoint and steps 4-8 in a
// fresh trainer: losses and the final state bit for bit.
void check_hybrid_resume(int stage, const std::string& sharding, const std::string& precision,
                         zm::Communicator& comm) {
  SCOPED_TRACE(fmt::format("stage {}, {} ranks, {}, {}", stage, comm.size(), sharding, precision));
  const std::string dir = shared_dir(MPI_COMM_WORLD, fmt::format("hybrid-resume{}", stage));
  const zm::Deck deck = deck_for(stage, 2, dir, 8, precision, {sharding});
  const auto whole = zm::make_trainer(deck, stage, comm);
  whole->init_parameters();
  const std::vector<double> all_losses = run_steps(*whole, 0, 8);
  const State expected = full_state(whole->engine());

  std::vector<double> losses;
  std::string path;
  {
    const auto first = zm::make_trainer(deck, stage, comm);
    first->init_parameters();
    losses = run_steps(*first, 0, 4);
    path = zm::write_checkpoint(first->engine(), first->deck(), 4);
  }
  const auto second = zm::make_trainer(deck, stage, comm);
  EXPECT_EQ(zm::load_checkpoint(second->engine(), second->deck(), path), 4);
  for (double l : run_steps(*second, 4, 8)) losses.push_back(l);
  EXPECT_EQ(losses, all_losses);
  EXPECT_TRUE(full_state(second->engine()) == expected) << "final state differs";
}

// A hybrid or hpZ run resumes at its own layout exactly, in fp32 and bf16.
TEST(CheckpointHybrid, HybridResumeGivesTheUninterruptedRunBitwise) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD);
  const int N = comm->size();
  if (N < 2 || N % 2 != 0) GTEST_SKIP() << "needs an even number of ranks";
  const struct {
    int stage;
    const char* key;
  } cases[] = {{1, "zero.shard_size"}, {3, "zero.shard_size"}, {3, "zero.secondary_shard_size"}};
  // bf16: the checkpoint holds the fp32 masters, and the resumed run rounds and re-gathers them.
  std::vector<std::string> precisions = {"fp32"};
  if (ZEROMINI_HAVE_BF16) precisions.push_back("bf16");
  for (const std::string& precision : precisions)
    for (const auto& [stage, key] : cases)
      check_hybrid_resume(stage, fmt::format("{}={}", key, N / 2), precision, *comm);
}

}  // namespace
