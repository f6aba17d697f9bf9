// The MPI backend's host staging (src/modules/mpi_staging/: what a CUDA build without CUDA-aware
// MPI runs), given to a communicator on the host: every collective gives the same result staged
// as unstaged (and the exact sum), several collectives in flight each get a buffer of their own,
// and the staging pool allocates once per buffer in flight, not once per collective. Also the
// ZEROMINI_MPI_GPU_AWARE override, and what the module registers.
//
// Values are small integers, exact in fp32 and bf16 and so are their sums over up to 4 ranks, so
// results compare exactly whatever order MPI sums in.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "comm/comm_types/mpi_communicator.hpp"
#include "common/kernel_test_util.hpp"
#include "common/test_watchdog.hpp"
#include "core/error.hpp"
#include "core/modules.hpp"
#include "modules/mpi_staging/gpu_aware.hpp"
#include "modules/mpi_staging/host_staging.hpp"

namespace {

using zm::DType;
using zm::MpiCommunicator;
using zm::testing::DeviceVec;

float staging_value(int rank, size_t i) {
  return static_cast<float>((rank + 1) * 8 + static_cast<int>(i % 5));
}

template <typename T>
std::vector<T> values_of(int rank, size_t n) {
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<T>(staging_value(rank, i));
  return v;
}

template <typename T>
std::vector<float> as_float(const std::vector<T>& v) {
  return std::vector<float>(v.begin(), v.end());
}

enum class Op {
  AllReduce,
  ReduceScatter,
  ReduceScatterInPlace,
  AllGather,
  AllGatherInPlace,
  Bcast,
  AllToAll
};
const Op kOps[] = {Op::AllReduce, Op::ReduceScatter,    Op::ReduceScatterInPlace,
                   Op::AllGather, Op::AllGatherInPlace, Op::Bcast,
                   Op::AllToAll};

// Runs `op` on `shard` elements per rank; returns what the caller's convention says is the
// result (the whole buffer, or this rank's shard of a reduce-scatter).
template <typename T>
std::vector<float> run(MpiCommunicator& comm, Op op, size_t shard) {
  const int rank = comm.rank(), ranks = comm.size();
  const size_t whole = shard * static_cast<size_t>(ranks);
  const DType type = zm::dtype_of<T>();
  DeviceVec<T> buffer(values_of<T>(rank, whole));
  DeviceVec<T> other(values_of<T>(rank + 7, whole));
  T* slot = buffer.data() + static_cast<size_t>(rank) * shard;
  switch (op) {
    case Op::AllReduce:
      comm.all_reduce_sum(buffer.data(), whole, type);
      break;
    case Op::ReduceScatter:
      comm.reduce_scatter_sum(buffer.data(), other.data(), shard, type);
      break;
    case Op::ReduceScatterInPlace:
      comm.reduce_scatter_sum(buffer.data(), slot, shard, type);
      break;
    case Op::AllGather:
      comm.all_gather(slot, other.data(), shard, type);
      break;
    case Op::AllGatherInPlace:
      comm.all_gather(slot, buffer.data(), shard, type);
      break;
    case Op::Bcast:
      comm.broadcast(buffer.data(), whole, type, ranks - 1);
      break;
    case Op::AllToAll:
      comm.all_to_all(buffer.data(), other.data(), shard, type);
      break;
  }
  const bool into_other = op == Op::ReduceScatter || op == Op::AllGather || op == Op::AllToAll;
  const std::vector<T> got = into_other ? other.get() : buffer.get();
  if (op == Op::ReduceScatter) return as_float(std::vector<T>(got.begin(), got.begin() + shard));
  if (op == Op::ReduceScatterInPlace)
    return as_float(std::vector<T>(got.begin() + rank * shard, got.begin() + (rank + 1) * shard));
  return as_float(got);
}

// What `op` must give, computed on the host.
std::vector<float> expected(Op op, int rank, int ranks, size_t shard) {
  const size_t whole = shard * static_cast<size_t>(ranks);
  std::vector<float> out;
  for (size_t i = 0; i < whole; ++i) {
    float sum = 0;
    for (int r = 0; r < ranks; ++r) sum += staging_value(r, i);
    const size_t owner = i / shard;
    switch (op) {
      case Op::AllReduce:
        out.push_back(sum);
        break;
      case Op::ReduceScatter:
      case Op::ReduceScatterInPlace:
        if (owner == static_cast<size_t>(rank)) out.push_back(sum);
        break;
      case Op::AllGather:
        out.push_back(staging_value(static_cast<int>(owner), i));
        break;
      case Op::AllGatherInPlace:
        out.push_back(staging_value(static_cast<int>(owner), i));
        break;
      case Op::Bcast:
        out.push_back(staging_value(ranks - 1, i));
        break;
      case Op::AllToAll:  // block `owner` came from rank owner's block for this rank
        out.push_back(staging_value(static_cast<int>(owner), rank * shard + i % shard));
        break;
    }
  }
  return out;
}

class MpiStagingTest : public ::testing::Test {
 protected:
  std::shared_ptr<zm::StagingPool> pool_ = std::make_shared<zm::StagingPool>();
  const zm::StagingPool& pool = *pool_;
  MpiCommunicator staged{MPI_COMM_WORLD, zm::testing::watchdog(),
                         std::make_unique<zm::HostStaging>(pool_)};
  MpiCommunicator direct{MPI_COMM_WORLD, zm::testing::watchdog()};
  int rank = staged.rank(), ranks = staged.size();

  template <typename T>
  void every_collective_agrees() {
    for (size_t shard : {size_t(1), size_t(1031)}) {
      for (Op op : kOps) {
        SCOPED_TRACE(::testing::Message() << "op " << static_cast<int>(op) << " shard " << shard);
        const std::vector<float> want = expected(op, rank, ranks, shard);
        EXPECT_EQ(run<T>(staged, op, shard), want);
        EXPECT_EQ(run<T>(direct, op, shard), want);
      }
    }
  }
};

// The module stages only where the device is a GPU whose memory MPI cannot read, and is the one
// a build without it names.
TEST(MpiStagingModule, StagesOnlyWhereMpiCannotReadTheDevice) {
  ASSERT_TRUE(zm::has_device_staging());
  const bool needed = !zm::device_is_host() && !zm::mpi_gpu_aware().aware;
  EXPECT_EQ(zm::make_device_staging() != nullptr, needed);
  EXPECT_EQ(zm::option_providing("device staging"), "ZEROMINI_WITH_MPI_STAGING");
}

TEST_F(MpiStagingTest, EveryCollectiveGivesTheSameResultStagedAndUnstagedF32) {
  every_collective_agrees<float>();
  EXPECT_GT(pool.allocations(), 0u);  // the staged path really ran
}

#if ZEROMINI_HAVE_BF16
TEST_F(MpiStagingTest, EveryCollectiveGivesTheSameResultStagedAndUnstagedBf16) {
  every_collective_agrees<zm::bf16>();
}
#endif

// Three collectives in flight at once, each waited for in reverse order, step after step: each
// needs a buffer of its own while in flight, and the pool allocates those three once.
TEST_F(MpiStagingTest, SeveralInFlightEachHaveABufferAllocatedOnce) {
  const size_t shard = 517, whole = shard * static_cast<size_t>(ranks);
  for (int step = 0; step < 40; ++step) {
    SCOPED_TRACE(step);
    DeviceVec<float> reduced(values_of<float>(rank, whole));
    DeviceVec<float> scattered_from(values_of<float>(rank, whole)), scattered(shard);
    DeviceVec<float> gathered(whole), mine(values_of<float>(rank, whole));
    std::vector<zm::CommRequest> requests;
    requests.push_back(staged.iall_reduce_sum(reduced.data(), whole, DType::F32));
    requests.push_back(
        staged.ireduce_scatter_sum(scattered_from.data(), scattered.data(), shard, DType::F32));
    requests.push_back(
        staged.iall_gather(mine.data() + rank * shard, gathered.data(), shard, DType::F32));
    EXPECT_EQ(pool.lent(), 3u);
    for (auto it = requests.rbegin(); it != requests.rend(); ++it) it->wait();
    EXPECT_EQ(pool.lent(), 0u);
    EXPECT_EQ(reduced.get(), expected(Op::AllReduce, rank, ranks, shard));
    EXPECT_EQ(scattered.get(), expected(Op::ReduceScatter, rank, ranks, shard));
    std::vector<float> want_gathered(whole);
    for (size_t i = 0; i < whole; ++i)
      want_gathered[i] = staging_value(static_cast<int>(i / shard), i);
    EXPECT_EQ(gathered.get(), want_gathered);
  }
  EXPECT_EQ(pool.buffers(), 3u);
  EXPECT_EQ(pool.allocations(), 3u);  // not one per collective (120)
}

// One collective at a time, of every kind and growing sizes: one buffer, grown during the first
// step, and nothing allocated in the steps after it.
TEST_F(MpiStagingTest, SteadyStepsAllocateNothing) {
  auto step = [&] {
    for (size_t shard : {size_t(3), size_t(64), size_t(1031)})
      for (Op op : kOps) run<float>(staged, op, shard);
  };
  step();
  const uint64_t after_first = pool.allocations();
  EXPECT_GE(after_first, 1u);
  for (int i = 0; i < 30; ++i) step();
  EXPECT_EQ(pool.allocations(), after_first);
  EXPECT_EQ(pool.buffers(), 1u);
  EXPECT_EQ(pool.lent(), 0u);
}

TEST(MpiGpuAware, TheEnvironmentOverridesTheLibrary) {
  EXPECT_FALSE(zm::decide_gpu_aware(false, nullptr).aware);
  EXPECT_TRUE(zm::decide_gpu_aware(true, nullptr).aware);
  EXPECT_TRUE(zm::decide_gpu_aware(true, "").aware);
  EXPECT_TRUE(zm::decide_gpu_aware(false, "1").aware);
  EXPECT_FALSE(zm::decide_gpu_aware(true, "0").aware);
  EXPECT_EQ(zm::decide_gpu_aware(false, "1").why, "ZEROMINI_MPI_GPU_AWARE=1");
  EXPECT_THROW(zm::decide_gpu_aware(false, "yes"), zm::Error);
}

}  // namespace
