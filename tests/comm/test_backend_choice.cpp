// comm.backend = "auto" picks NCCL only where every rank of every node has a GPU of its own, and
// an explicit "nccl" on ranks that share a GPU stops before NCCL starts. The GPU identities come
// through the seam that CUDA builds fill from the CUDA runtime; here CUDA_VISIBLE_DEVICES fills
// it (devices_named_by_environment), so the same planning, exchange and agreement run on a host
// as on a GPU node.
#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>
#include <string>

#include "comm/backend_choice.hpp"
#include "comm/device_select.hpp"
#include "comm/node_split.hpp"
#include "common/test_watchdog.hpp"
#include "core/error.hpp"

namespace {

// The devices CUDA_VISIBLE_DEVICES names, its entries taken as identities (unset or empty: none),
// which is what the runtime shows a process on a node whose GPUs are handed out that way.
zm::VisibleDevices devices_named_by_environment() {
  zm::VisibleDevices visible;
  const char* text = std::getenv("CUDA_VISIBLE_DEVICES");
  std::stringstream entries(text ? text : "");
  std::string entry;
  while (std::getline(entries, entry, ','))
    if (!entry.empty()) visible.identities.push_back(entry);
  return visible;
}

using zm::BackendChoice;
using zm::choose_backend;

TEST(BackendChoice, AutoIsNcclWhenEveryRankHasItsOwnGpu) {
  const BackendChoice choice = choose_backend("auto", true, {"0000:19:00.0", "0000:3b:00.0"});
  EXPECT_EQ(choice.backend, "nccl");
  EXPECT_EQ(choice.reason, "");
}

TEST(BackendChoice, AutoIsMpiWhenTwoRanksShareAGpu) {
  const BackendChoice choice = choose_backend("auto", true, {"0000:19:00.0", "0000:19:00.0"});
  EXPECT_EQ(choice.backend, "mpi");
  EXPECT_NE(choice.reason.find("local ranks 0 and 1 (of 2 on this node) share GPU 0000:19:00.0"),
            std::string::npos)
      << choice.reason;
}

TEST(BackendChoice, AutoIsMpiWhenARankHasNoGpu) {
  const BackendChoice choice = choose_backend("auto", true, {"0", ""});
  EXPECT_EQ(choice.backend, "mpi");
  EXPECT_NE(choice.reason.find("local rank 1 has no GPU"), std::string::npos) << choice.reason;
}

TEST(BackendChoice, AutoIsMpiInABuildWithoutNccl) {
  EXPECT_EQ(choose_backend("auto", false, {"0", "1"}).backend, "mpi");
  EXPECT_EQ(choose_backend("auto", false, {"0", "1"}).reason, "");
}

TEST(BackendChoice, MpiIsMpiWhateverTheGpus) {
  EXPECT_EQ(choose_backend("mpi", true, {"0", "0"}).backend, "mpi");
  EXPECT_EQ(choose_backend("mpi", false, {}).backend, "mpi");
}

TEST(BackendChoice, NcclOnASharedGpuIsRefusedWithWhatToDo) {
  try {
    choose_backend("nccl", true, {"7", "7", "8"});
    FAIL() << "expected a refusal";
  } catch (const zm::Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("share GPU 7"), std::string::npos) << message;
    EXPECT_NE(message.find("Set comm.backend = \"mpi\""), std::string::npos) << message;
  }
}

TEST(BackendChoice, NcclWithoutNcclOrAnUnknownBackendIsRefused) {
  EXPECT_THROW(choose_backend("nccl", false, {"0"}), zm::Error);
  EXPECT_THROW(choose_backend("gloo", true, {"0"}), zm::Error);
}

// The whole path at this test's rank count, each node's ranks seeing the GPUs that
// CUDA_VISIBLE_DEVICES names.
class BackendOnNode : public ::testing::Test {
 protected:
  void SetUp() override {
    zm::NodeComm node(MPI_COMM_WORLD);
    node_ranks_ = node.size();
  }
  BackendChoice choose_with_visible(const char* devices, const std::string& requested) {
    setenv("CUDA_VISIBLE_DEVICES", devices, 1);
    const zm::NodeDevices plan =
        zm::plan_node_devices(MPI_COMM_WORLD, devices_named_by_environment());
    unsetenv("CUDA_VISIBLE_DEVICES");
    device_ = plan.device;
    return zm::agree_on_backend(zm::testing::watchdog(), MPI_COMM_WORLD, requested, true,
                                plan.node_identities);
  }
  int node_ranks_ = 1;
  int device_ = -1;
};

TEST_F(BackendOnNode, OneVisibleGpuAndSeveralRanksPerNodePicksMpi) {
  const BackendChoice choice = choose_with_visible("0", "auto");
  EXPECT_EQ(device_, 0);
  if (node_ranks_ == 1) {
    EXPECT_EQ(choice.backend, "nccl");
  } else {
    EXPECT_EQ(choice.backend, "mpi");
    EXPECT_NE(choice.reason.find("share GPU 0"), std::string::npos) << choice.reason;
  }
}

TEST_F(BackendOnNode, AGpuPerRankPicksNccl) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const BackendChoice choice = choose_with_visible("0,1,2,3", "auto");
  EXPECT_EQ(choice.backend, "nccl") << choice.reason;
  EXPECT_LT(device_, node_ranks_);  // local rank % 4: a GPU of its own at up to 4 ranks
}

TEST_F(BackendOnNode, ExplicitNcclOnASharedGpuStopsEveryRank) {
  if (node_ranks_ == 1) GTEST_SKIP() << "needs two ranks on a node";
  EXPECT_THROW(choose_with_visible("0", "nccl"), zm::CollectiveError);
}

TEST_F(BackendOnNode, NoVisibleGpuPicksMpi) {
  const BackendChoice choice = choose_with_visible("", "auto");
  EXPECT_EQ(device_, -1);
  EXPECT_EQ(choice.backend, "mpi");
  EXPECT_NE(choice.reason.find("has no GPU"), std::string::npos) << choice.reason;
}

}  // namespace
