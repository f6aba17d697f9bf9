// Every collective of the MPI Communicator against a reference computed on rank-distinct data,
// at sizes 0, 1, a prime and a few MiB; in-place forms; several operations in flight completed in
// any order; padding never read as data; and the byte accounting.
//
// Values are small integers (exactly representable in fp32, and their sums too), so results can
// be compared exactly whatever order the MPI library sums in.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>

#include "comm/communicator.hpp"
#include "common/kernel_test_util.hpp"
#include "common/test_watchdog.hpp"
#include "core/error.hpp"

namespace {

using zm::CommOp;
using zm::DType;
using zm::testing::DeviceVec;

const size_t kSizes[] = {0, 1, 7919, 3 * 1024 * 1024 / 4};  // elements: 0, 1, a prime, 3 MiB

float value(int rank, size_t i) {
  return static_cast<float>((rank + 1) * 1000 + i % 997);
}

// Sum over ranks of value(r, i).
float summed(int ranks, size_t i) {
  float s = 0;
  for (int r = 0; r < ranks; ++r) s += value(r, i);
  return s;
}

std::vector<float> values_of(int rank, size_t n, size_t offset = 0) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = value(rank, offset + i);
  return v;
}

class CommTest : public ::testing::Test {
 protected:
  void SetUp() override {
    comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
    rank = comm->rank();
    ranks = comm->size();
  }
  std::unique_ptr<zm::Communicator> comm;
  int rank = 0, ranks = 1;
};

TEST_F(CommTest, AllReduceSumsEveryElement) {
  for (size_t n : kSizes) {
    SCOPED_TRACE(n);
    DeviceVec<float> data(values_of(rank, n));
    comm->all_reduce_sum(data.data(), n, DType::F32);
    const auto got = data.get();
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], summed(ranks, i)) << i;
  }
}

TEST_F(CommTest, ReduceScatterGivesEachRankItsShardWithPaddingIgnored) {
  for (size_t n : kSizes) {
    SCOPED_TRACE(n);
    // The caller pads the logical size n up to a multiple of the rank count.
    const size_t shard = (n + ranks - 1) / ranks, padded = shard * ranks;
    std::vector<float> send = values_of(rank, padded);
    for (size_t i = n; i < padded; ++i) send[i] = std::numeric_limits<float>::quiet_NaN();
    DeviceVec<float> in(send);
    // The receive buffer has sentinels on both sides of the shard: they must stay untouched.
    const size_t guard = 5;
    std::vector<float> out_host(shard + 2 * guard, -7.0f);
    DeviceVec<float> out(out_host);
    comm->reduce_scatter_sum(in.data(), out.data() + guard, shard, DType::F32);
    const auto got = out.get();
    for (size_t g = 0; g < guard; ++g) {
      ASSERT_EQ(got[g], -7.0f);
      ASSERT_EQ(got[guard + shard + g], -7.0f);
    }
    for (size_t i = 0; i < shard; ++i) {
      const size_t global = rank * shard + i;
      if (global < n) {
        ASSERT_EQ(got[guard + i], summed(ranks, global)) << global;
      }
      // Padding is summed padding (NaN here), never mixed into real data.
    }
  }
}

TEST_F(CommTest, ReduceScatterInPlaceLeavesTheResultInThisRanksSlot) {
  const size_t shard = 1031;
  DeviceVec<float> data(values_of(rank, shard * ranks));
  comm->reduce_scatter_sum(data.data(), data.data() + rank * shard, shard, DType::F32);
  const auto got = data.get();
  for (size_t i = 0; i < shard; ++i)
    ASSERT_EQ(got[rank * shard + i], summed(ranks, rank * shard + i)) << i;
}

TEST_F(CommTest, AllGatherCollectsEveryShardInRankOrder) {
  for (size_t n : kSizes) {
    SCOPED_TRACE(n);
    const size_t shard = (n + ranks - 1) / ranks;
    DeviceVec<float> mine(values_of(rank, shard, rank * shard));
    DeviceVec<float> all(shard * ranks);
    comm->all_gather(mine.data(), all.data(), shard, DType::F32);
    const auto got = all.get();
    for (int r = 0; r < ranks; ++r)
      for (size_t i = 0; i < shard; ++i)
        ASSERT_EQ(got[r * shard + i], value(r, r * shard + i)) << r << " " << i;
  }
}

TEST_F(CommTest, AllGatherInPlace) {
  const size_t shard = 4099;
  std::vector<float> host(shard * ranks, -1.0f);
  for (size_t i = 0; i < shard; ++i) host[rank * shard + i] = value(rank, i);
  DeviceVec<float> all(host);
  comm->all_gather(all.data() + rank * shard, all.data(), shard, DType::F32);
  const auto got = all.get();
  for (int r = 0; r < ranks; ++r)
    for (size_t i = 0; i < shard; ++i) ASSERT_EQ(got[r * shard + i], value(r, i));
}

TEST_F(CommTest, BroadcastFromEveryRoot) {
  for (int root = 0; root < ranks; ++root) {
    DeviceVec<float> data(values_of(rank, 7919));
    comm->broadcast(data.data(), 7919, DType::F32, root);
    const auto got = data.get();
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], value(root, i));
  }
}

// Block p of every rank's send goes to rank p, and lands in its recv at the sender's slot; also
// as raw bytes (the packed segments of the quantized gradient reduction).
TEST_F(CommTest, AllToAllSendsBlockPToRankP) {
  for (size_t block : {size_t(0), size_t(1), size_t(7919)}) {
    SCOPED_TRACE(block);
    std::vector<float> send(block * ranks);
    for (int p = 0; p < ranks; ++p)
      for (size_t i = 0; i < block; ++i) send[p * block + i] = value(rank, p * 10007 + i);
    DeviceVec<float> in(send), out(std::vector<float>(block * ranks, -1.0f));
    comm->all_to_all(in.data(), out.data(), block, DType::F32);
    const auto got = out.get();
    for (int p = 0; p < ranks; ++p)
      for (size_t i = 0; i < block; ++i)
        ASSERT_EQ(got[p * block + i], value(p, rank * 10007 + i)) << p << " " << i;
  }
  std::vector<uint8_t> bytes(3 * ranks);
  for (int p = 0; p < ranks; ++p)
    for (int i = 0; i < 3; ++i) bytes[3 * p + i] = static_cast<uint8_t>(16 * rank + 4 * p + i);
  DeviceVec<uint8_t> in(bytes), out(std::vector<uint8_t>(3 * ranks, 0));
  comm->all_to_all(in.data(), out.data(), 3, DType::U8);
  const auto got = out.get();
  for (int p = 0; p < ranks; ++p)
    for (int i = 0; i < 3; ++i) ASSERT_EQ(got[3 * p + i], 16 * p + 4 * rank + i);
}

TEST_F(CommTest, ManyInFlightCompleteInAnyOrder) {
  const size_t n = 100003, shard = (n + ranks - 1) / ranks;
  DeviceVec<float> a(values_of(rank, n)), b(values_of(rank, n));
  DeviceVec<float> rs_in(values_of(rank, shard * ranks)), rs_out(shard);
  DeviceVec<float> ag_in(values_of(rank, shard)), ag_out(shard * ranks);
  std::vector<zm::CommRequest> requests;
  requests.push_back(comm->iall_reduce_sum(a.data(), n, DType::F32));
  requests.push_back(comm->ireduce_scatter_sum(rs_in.data(), rs_out.data(), shard, DType::F32));
  requests.push_back(comm->iall_gather(ag_in.data(), ag_out.data(), shard, DType::F32));
  requests.push_back(comm->iall_reduce_sum(b.data(), n, DType::F32));
  // Poll some, then wait in reverse order.
  for (int i = 0; i < 10; ++i) {
    comm->progress();
    requests[2].test();
  }
  for (auto it = requests.rbegin(); it != requests.rend(); ++it) it->wait();
  const auto got_a = a.get(), got_b = b.get(), got_rs = rs_out.get(), got_ag = ag_out.get();
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(got_a[i], summed(ranks, i));
    ASSERT_EQ(got_b[i], summed(ranks, i));
  }
  for (size_t i = 0; i < shard; ++i) ASSERT_EQ(got_rs[i], summed(ranks, rank * shard + i));
  for (int r = 0; r < ranks; ++r)
    for (size_t i = 0; i < shard; ++i) ASSERT_EQ(got_ag[r * shard + i], value(r, i));
}

TEST_F(CommTest, TestPollingCompletesWithoutWait) {
  DeviceVec<float> data(values_of(rank, 50000));
  zm::CommRequest request = comm->iall_reduce_sum(data.data(), 50000, DType::F32);
  while (!request.test()) comm->progress();
  EXPECT_FALSE(request.pending());
  EXPECT_EQ(data.get()[123], summed(ranks, 123));
}

TEST_F(CommTest, AccountingFollowsTheRingConvention) {
  comm->reset_stats();
  const size_t n = 12345, shard = 1000;
  DeviceVec<float> a(n), rs(shard * ranks), out(shard), ag(shard * ranks);
  comm->all_reduce_sum(a.data(), n, DType::F32);
  comm->all_reduce_sum(a.data(), n, DType::F32);
  comm->reduce_scatter_sum(rs.data(), out.data(), shard, DType::F32);
  comm->all_gather(out.data(), ag.data(), shard, DType::F32);
  comm->broadcast(a.data(), n, DType::F32, 0);
  comm->all_to_all(rs.data(), ag.data(), shard, DType::F32);
  comm->barrier();
  const double N = ranks;
  const auto& s = comm->stats();
  EXPECT_EQ(s[CommOp::AllReduce].calls, 2u);
  EXPECT_DOUBLE_EQ(s[CommOp::AllReduce].bytes, 2 * (2 * (N - 1) / N * n * 4));
  EXPECT_EQ(s[CommOp::ReduceScatter].calls, 1u);
  EXPECT_DOUBLE_EQ(s[CommOp::ReduceScatter].bytes, (N - 1) / N * shard * ranks * 4);
  EXPECT_EQ(s[CommOp::AllGather].calls, 1u);
  EXPECT_DOUBLE_EQ(s[CommOp::AllGather].bytes, (N - 1) / N * shard * ranks * 4);
  EXPECT_EQ(s[CommOp::Broadcast].calls, 1u);
  EXPECT_DOUBLE_EQ(s[CommOp::Broadcast].bytes, ranks > 1 ? n * 4.0 : 0.0);
  EXPECT_EQ(s[CommOp::Barrier].calls, 1u);
  EXPECT_EQ(s[CommOp::AllToAll].calls, 1u);  // the block a rank keeps is not sent
  EXPECT_DOUBLE_EQ(s[CommOp::AllToAll].bytes, (N - 1) / N * shard * ranks * 4);
  for (const auto& op : s.ops) EXPECT_GE(op.seconds, 0.0);
  EXPECT_DOUBLE_EQ(zm::ring_bytes(CommOp::AllReduce, 100, 4), 150);
  EXPECT_DOUBLE_EQ(zm::ring_bytes(CommOp::ReduceScatter, 100, 4), 75);
  EXPECT_DOUBLE_EQ(zm::ring_bytes(CommOp::AllGather, 100, 1), 0);
  EXPECT_DOUBLE_EQ(zm::ring_bytes(CommOp::AllToAll, 100, 4), 75);
  comm->reset_stats();
  EXPECT_EQ(comm->stats().total().calls, 0u);
}

TEST_F(CommTest, UnknownBackendIsRefused) {
  EXPECT_THROW(zm::make_communicator("gloo", MPI_COMM_WORLD, zm::testing::watchdog()), zm::Error);
}

}  // namespace
