// Checkpoints under hybrid sharding (zero.shard_size): every unit is stored whole whatever the
// shard groups, so a checkpoint reshards across shard sizes as it does across rank counts and
// stages, and a hybrid run resumes exactly.
#include <gtest/gtest.h>
#include <hdf5.h>

#include "common/checkpoint_test_util.hpp"
#include "common/test_watchdog.hpp"
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
void check_reshard_from(const std::string& sharding, zm::Communicator& world) {
  const std::string dir = shared_dir(MPI_COMM_WORLD, "hybrid-reshard");
  const int64_t global_batch = 12;
  const zm::Deck written_deck = deck_for(3, global_batch / 4, dir, 8, "fp32", {sharding});
  const auto writer = zm::make_trainer(written_deck, 3, world);
  ASSERT_EQ(writer->comms().mesh().groups(), 2);
  writer->init_parameters();
  run_steps(*writer, 0, 4);
  const std::string path = zm::write_checkpoint(writer->engine(), writer->deck(), 4).path;
  EXPECT_EQ(shard_size_written(path), 2);
  const State written = full_state(writer->engine());
  const std::vector<double> continued = run_steps(*writer, 4, 8);  // the uninterrupted run

  const struct { int ranks, stage, shard_size; } targets[] = {{3, 1, 0}, {4, 2, 0}, {2, 3, 1}};
  for (const auto& target : targets) {
    SCOPED_TRACE(fmt::format("{} ranks, stage {}, shard_size {}", target.ranks, target.stage,
                             target.shard_size));
    zm::testing::expect_resumes_on(target.ranks, target.stage, dir, global_batch,
                                   {fmt::format("zero.shard_size={}", target.shard_size)}, path,
                                   written, continued);
  }
}

TEST(CheckpointHybrid, ReshardsAcrossShardSizes) {
  auto world = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  if (world->size() != 4) GTEST_SKIP() << "needs 4 ranks";
  check_reshard_from("zero.shard_size=2", *world);
}

// hpZ's optimizer state is written by every rank (each holds a sub-shard only it has).
TEST(CheckpointHybrid, HpzCheckpointsReshardToo) {
  auto world = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  if (world->size() != 4) GTEST_SKIP() << "needs 4 ranks";
  check_reshard_from("zero.secondary_shard_size=2", *world);
}

// A hybrid or hpZ run resumes at its own layout exactly, in fp32 and bf16.
TEST(CheckpointHybrid, HybridResumeGivesTheUninterruptedRunBitwise) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
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
    for (const auto& [stage, key] : cases) {
      SCOPED_TRACE(fmt::format("stage {}, {} ranks, {} = {}, {}", stage, N, key, N / 2, precision));
      const std::string dir = shared_dir(MPI_COMM_WORLD, fmt::format("hybrid-resume{}", stage));
      zm::testing::expect_exact_resume(
          deck_for(stage, 2, dir, 8, precision, {fmt::format("{}={}", key, N / 2)}), stage, *comm);
    }
}

}  // namespace
