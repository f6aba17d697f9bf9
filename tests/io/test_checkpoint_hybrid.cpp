// Checkpoints under hybrid sharding (zero.shard_size): every unit is stored whole whatever the
// shard groups, so a checkpoint reshards across shard sizes as it does across rank counts and
// stages, and a hybrid run resumes exactly.
#include <gtest/gtest.h>

#include "common/checkpoint_test_util.hpp"
#include "common/test_watchdog.hpp"
#include "io/checkpoint.hpp"

namespace {

using zm::testing::deck_for;
using zm::testing::shared_dir;

TEST(CheckpointHybrid, ReshardsAcrossShardSizes) {
  auto world = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  if (world->size() != 4) GTEST_SKIP() << "needs 4 ranks";
  zm::testing::check_reshard_from("zero.shard_size=2", *world);
}

// A hybrid run resumes at its own layout exactly, in fp32 and bf16.
TEST(CheckpointHybrid, HybridResumeGivesTheUninterruptedRunBitwise) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  if (N < 2 || N % 2 != 0) GTEST_SKIP() << "needs an even number of ranks";
  const struct {
    int stage;
    const char* key;
  } cases[] = {{1, "zero.shard_size"}, {3, "zero.shard_size"}};
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
