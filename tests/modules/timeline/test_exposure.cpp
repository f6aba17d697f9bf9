// Exposed communication and overlap efficiency from a step's collectives (exposure.hpp),
// and the same figures measured on real collectives (a blocking one and one hidden behind work).
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "common/test_watchdog.hpp"
#include "core/timer.hpp"
#include "modules/timeline/exposure.hpp"

namespace zm {
namespace {

CollectiveTimes collective(double posted, double completed) {
  CollectiveTimes c;
  c.posted = posted;
  c.completed = completed;
  return c;
}

CollectiveTimes waited(double posted, double completed, double wait_begin, double wait_end) {
  CollectiveTimes c = collective(posted, completed);
  c.waited = true;
  c.wait_begin = wait_begin;
  c.wait_end = wait_end;
  return c;
}

TEST(Exposure, InFlightIsTheUnionOfOverlappingCollectives) {
  // [0, 10] and [5, 20] overlap: 20 in flight; [30, 31] adds 1; [2, 3] lies inside the first.
  const CommExposure e =
      exposure_of({collective(0, 10), collective(5, 20), collective(30, 31), collective(2, 3)});
  EXPECT_DOUBLE_EQ(e.in_flight, 21.0);
  EXPECT_DOUBLE_EQ(e.exposed, 0.0);
  EXPECT_DOUBLE_EQ(overlap_efficiency(e.exposed, e.in_flight), 1.0);
}

TEST(Exposure, ExposedIsTheSumOfWaits) {
  const CommExposure e = exposure_of({waited(0, 10, 7, 10), waited(5, 20, 16, 20)});
  EXPECT_DOUBLE_EQ(e.exposed, 7.0);
  EXPECT_DOUBLE_EQ(e.in_flight, 20.0);
  EXPECT_DOUBLE_EQ(overlap_efficiency(e.exposed, e.in_flight), 1.0 - 7.0 / 20.0);
}

// Each kind's time in flight is the union of its own intervals; another kind does not count.
TEST(Exposure, InFlightByOpSeparatesKinds) {
  CollectiveTimes gather = collective(5, 15);
  gather.op = CommOp::AllGather;
  CollectiveTimes reduce_a = collective(0, 10), reduce_b = collective(8, 12);
  reduce_a.op = reduce_b.op = CommOp::AllReduce;
  const auto seconds = in_flight_by_op({reduce_a, gather, reduce_b});
  EXPECT_DOUBLE_EQ(seconds[static_cast<size_t>(CommOp::AllReduce)], 12.0);
  EXPECT_DOUBLE_EQ(seconds[static_cast<size_t>(CommOp::AllGather)], 10.0);
  EXPECT_DOUBLE_EQ(seconds[static_cast<size_t>(CommOp::ReduceScatter)], 0.0);
}

// nccl-tests: algbw = S / t; busbw = algbw x 2(n-1)/n (all_reduce), x (n-1)/n (all_gather,
// reduce_scatter). The ring bytes the communicator counts make bus_bandwidth exactly that.
TEST(Exposure, BusBandwidthIsTheNcclTestsConvention) {
  const double buffer = 64.0 * 1024 * 1024, seconds = 0.25;
  for (int n : {2, 3, 8}) {
    const double algbw = buffer / seconds;
    EXPECT_DOUBLE_EQ(bus_bandwidth(ring_bytes(CommOp::AllReduce, buffer, n), seconds),
                     algbw * 2.0 * (n - 1) / n);
    EXPECT_DOUBLE_EQ(bus_bandwidth(ring_bytes(CommOp::AllGather, buffer, n), seconds),
                     algbw * (n - 1) / n);
    EXPECT_DOUBLE_EQ(bus_bandwidth(ring_bytes(CommOp::ReduceScatter, buffer, n), seconds),
                     algbw * (n - 1) / n);
  }
  EXPECT_TRUE(std::isnan(bus_bandwidth(1.0, 0.0)));  // nothing timed: no figure
}

TEST(Exposure, BlockingCollectivesHideNothing) {
  const CommExposure e = exposure_of({waited(1, 4, 1, 4), waited(6, 8, 6, 8)});
  EXPECT_DOUBLE_EQ(e.exposed, e.in_flight);
  EXPECT_DOUBLE_EQ(overlap_efficiency(e.exposed, e.in_flight), 0.0);
}

TEST(Exposure, NothingInFlightHasNoEfficiency) {
  const CommExposure e = exposure_of({});
  EXPECT_EQ(e.in_flight, 0.0);
  EXPECT_TRUE(std::isnan(overlap_efficiency(e.exposed, e.in_flight)));
}

// On a real communicator: a blocking all-reduce is all exposed; one posted, hidden behind 20 ms
// of host work with progress calls, and waited for after, is (almost) all hidden.
TEST(Exposure, MeasuredOnRealCollectives) {
  auto comm = make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  Kokkos::View<float*, MemSpace> data("data", 1024);
  CollectiveRecorder recorder;
  recorder.begin(*comm);
  comm->all_reduce_sum(data.data(), data.extent(0), DType::F32);
  const CommExposure blocking = exposure_of(recorder.end());
  EXPECT_GT(blocking.in_flight, 0.0);
  EXPECT_NEAR(blocking.exposed, blocking.in_flight, 1e-9);

  recorder.begin(*comm);
  CommRequest request = comm->iall_reduce_sum(data.data(), data.extent(0), DType::F32);
  const double until = wall_seconds() + 0.02;
  while (wall_seconds() < until) {
    comm->progress();
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  request.wait();
  const std::vector<CollectiveTimes> records = recorder.end();
  ASSERT_EQ(records.size(), 1u);
  const CommExposure hidden = exposure_of(records);
  EXPECT_GT(hidden.in_flight, 0.0);
  // Completed while the rank worked (noted by progress), so it did not wait at all.
  EXPECT_FALSE(records[0].waited);
  EXPECT_EQ(hidden.exposed, 0.0);
}

}  // namespace
}  // namespace zm
