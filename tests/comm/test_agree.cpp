// The comm helpers the rest of the code builds on: agree() (every rank ends with success, or with
// the first failing rank's message) and NodeComm (the ranks of this node, freed with the object);
// and a communicator with the watchdog's windows (set_timeout) still completing its collectives.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "comm/agree.hpp"
#include "comm/communicator.hpp"
#include "comm/node_split.hpp"
#include "common/test_watchdog.hpp"

namespace {

struct World {
  int rank = 0, size = 1;
  World() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
  }
};

TEST(Agree, SuccessEverywhereIsOk) {
  const zm::Agreement outcome = zm::agree(zm::testing::watchdog(), MPI_COMM_WORLD, "");
  EXPECT_TRUE(outcome.ok());
  EXPECT_EQ(outcome.failed_rank, -1);
  EXPECT_EQ(outcome.message, "");
}

TEST(Agree, EveryRankGetsTheFirstFailingRanksMessage) {
  const World world;
  // The last rank fails, and so does every odd rank: the lowest of them wins.
  const bool fails = world.rank == world.size - 1 || world.rank % 2 == 1;
  const std::string error = fails ? "rank " + std::to_string(world.rank) + " failed" : "";
  const zm::Agreement outcome = zm::agree(zm::testing::watchdog(), MPI_COMM_WORLD, error);
  const int first = world.size == 1 ? 0 : 1;
  EXPECT_FALSE(outcome.ok());
  EXPECT_EQ(outcome.failed_rank, first);
  EXPECT_EQ(outcome.message, "rank " + std::to_string(first) + " failed");
}

TEST(Agree, ALongMessageIsCutToTheLimit) {
  const World world;
  const std::string error = world.rank == 0 ? std::string(3000, 'x') : "";
  const zm::Agreement outcome = zm::agree(zm::testing::watchdog(), MPI_COMM_WORLD, error);
  EXPECT_EQ(outcome.failed_rank, 0);
  EXPECT_EQ(outcome.message, std::string(zm::kAgreedMessageMax, 'x'));
}

TEST(Agree, OnSelfIsThisRanksOwnOutcome) {
  EXPECT_TRUE(zm::agree(zm::testing::watchdog(), MPI_COMM_SELF, "").ok());
  EXPECT_EQ(zm::agree(zm::testing::watchdog(), MPI_COMM_SELF, "mine").message, "mine");
}

TEST(NodeComm, SpansThisNodesRanksInWorldOrder) {
  const World world;
  const zm::NodeComm node(MPI_COMM_WORLD);
  ASSERT_NE(node.get(), MPI_COMM_NULL);
  EXPECT_GE(node.size(), 1);
  EXPECT_LE(node.size(), world.size);
  EXPECT_LE(node.rank(), world.rank);  // keyed by the world rank: node ranks keep its order
  int ranks_here = 0;
  MPI_Allreduce(&world.size, &ranks_here, 1, MPI_INT, MPI_MIN, node.get());
  EXPECT_EQ(ranks_here, world.size);
}

TEST(NodeComm, MovesOwnershipAndFreesOnce) {
  zm::NodeComm a(MPI_COMM_WORLD);
  const MPI_Comm held = a.get();
  zm::NodeComm b(std::move(a));
  EXPECT_EQ(a.get(), MPI_COMM_NULL);  // moved from: empty
  EXPECT_EQ(b.get(), held);
  zm::NodeComm c;
  EXPECT_EQ(c.get(), MPI_COMM_NULL);
  c = std::move(b);
  EXPECT_EQ(c.get(), held);
  c = zm::NodeComm(MPI_COMM_WORLD);  // frees the one it held
  EXPECT_NE(c.get(), MPI_COMM_NULL);
}

TEST(Watchdog, CollectivesCompleteWithTheProgressWindows) {
  const World world;
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  comm->set_timeout(60.0);
  float value = static_cast<float>(world.rank + 1);
  comm->all_reduce_sum(&value, 1, zm::DType::F32);
  EXPECT_EQ(value, static_cast<float>(world.size * (world.size + 1) / 2));
  comm->barrier();
  comm->set_timeout(30.0);  // again: the windows exist already
  comm->barrier();
}

}  // namespace
