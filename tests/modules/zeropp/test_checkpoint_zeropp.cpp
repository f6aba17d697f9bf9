// Checkpoints under hpZ and qwZ: hpZ's checkpoints reshard as hybrid sharding's do (every rank
// writes the sub-shard of the optimizer state only it holds), and an hpZ run, or one of int8
// weight gathers alone and under hpZ, resumes at its own layout exactly (under bf16 the resumed
// run rounds the fp32 masters and quantizes them as every step's gather across the groups does).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/checkpoint_test_util.hpp"
#include "common/test_watchdog.hpp"

namespace {

TEST(CheckpointZeropp, HpzCheckpointsReshard) {
  auto world = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  if (world->size() != 4) GTEST_SKIP() << "needs 4 ranks";
  zm::testing::check_reshard_from("zero.secondary_shard_size=2", *world);
}

TEST(CheckpointZeropp, HpzResumeGivesTheUninterruptedRunBitwise) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  if (N < 2 || N % 2 != 0) GTEST_SKIP() << "needs an even number of ranks";
  std::vector<std::string> precisions = {"fp32"};
  if (ZEROMINI_HAVE_BF16) precisions.push_back("bf16");
  for (const std::string& precision : precisions) {
    SCOPED_TRACE(fmt::format("stage 3, {} ranks, hpZ {}, {}", N, N / 2, precision));
    const std::string dir = zm::testing::shared_dir(MPI_COMM_WORLD, "hybrid-resume3");
    zm::testing::expect_exact_resume(
        zm::testing::deck_for(3, 2, dir, 8, precision,
                              {fmt::format("zero.secondary_shard_size={}", N / 2)}),
        3, *comm);
  }
}

TEST(CheckpointZeropp, Int8GatherResumeGivesTheUninterruptedRunBitwise) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  if (N < 2 || N % 2 != 0) GTEST_SKIP() << "needs an even number of ranks";
  std::vector<std::string> precisions = {"fp32"};
  if (ZEROMINI_HAVE_BF16) precisions.push_back("bf16");
  const std::vector<std::string> shardings = {"zero.shard_size=0",
                                              fmt::format("zero.secondary_shard_size={}", N / 2)};
  for (const std::string& precision : precisions)
    for (const std::string& sharding : shardings) {
      SCOPED_TRACE(fmt::format("stage 3, {} ranks, {}, {}", N, sharding, precision));
      const std::string dir = zm::testing::shared_dir(MPI_COMM_WORLD, "qwz-resume");
      zm::testing::expect_exact_resume(
          zm::testing::deck_for(3, 2, dir, 8, precision, {sharding, "zero.quantize_weights=int8"}),
          3, *comm);
    }
}

}  // namespace
