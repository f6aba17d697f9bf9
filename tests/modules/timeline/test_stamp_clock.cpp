// Device time stamps (stamp_clock.hpp) belong to the clock that took them, and a clock's new
// epoch cuts its own stamps only: the records of each communicator's steps
// (collective_records.hpp) and the tracer's windows each stamp on a clock of their own. When
// every communicator shared one pool, each one's step reset it under stamps the others had taken
// (NCCL stamps every collective) and still had to resolve.
//
// The collectives here are a stream-ordered backend's made for the test, marked as NCCL's are
// (on the recorder's clock when posted and at completion, the waits on the compute stream), so
// that host builds take the path of GPU builds: their stamps are host times kept in the same
// kind of pool.
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <thread>

#include "comm/communicator.hpp"
#include "comm/phase.hpp"
#include "common/test_watchdog.hpp"
#include "core/timer.hpp"
#include "modules/timeline/collective_records.hpp"
#include "modules/timeline/trace.hpp"

namespace zm {
namespace {

constexpr double kPause = 0.02;  // seconds

void pause() {
  std::this_thread::sleep_for(std::chrono::duration<double>(kPause));
}

// A collective of the backend below: complete once waited for.
class StreamPendingOp : public detail::PendingOp {
 public:
  bool test() override { return done_; }
  void wait() override { done_ = true; }
  bool stream_ordered() const override { return true; }

 private:
  bool done_ = false;
};

// One rank whose collectives are marked as the NCCL backend marks them: on its stream, the post and
// the completion (which on the host is the post).
class StreamOrderedCommunicator : public Communicator {
 public:
  StreamOrderedCommunicator() : Communicator(testing::watchdog()) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string name() const override { return "stream-ordered test"; }
  MPI_Comm mpi_comm() const override { return MPI_COMM_SELF; }

 protected:
  std::unique_ptr<detail::PendingOp> post_all_reduce(void*, size_t, DType) override {
    return post();
  }
  std::unique_ptr<detail::PendingOp> post_reduce_scatter(const void*, void*, size_t,
                                                         DType) override {
    return post();
  }
  std::unique_ptr<detail::PendingOp> post_all_gather(const void*, void*, size_t, DType) override {
    return post();
  }
  std::unique_ptr<detail::PendingOp> post_broadcast(void*, size_t, DType, int) override {
    return post();
  }
  std::unique_ptr<detail::PendingOp> post_all_to_all(const void*, void*, size_t, DType) override {
    return post();
  }
  void do_barrier() override {}

 private:
  std::unique_ptr<detail::PendingOp> post() {
    auto pending = std::make_unique<StreamPendingOp>();
    pending->device_posted = mark_stream(nullptr);
    pending->device_completed = mark_stream(nullptr);
    return pending;
  }
};

TEST(StampClock, AStampIsResolvedByItsClockInItsEpochOnly) {
  StampClock a, b;
  const double before = wall_seconds();
  const Stamp stamp = a.compute_stamp();
  const double after = wall_seconds();
  b.begin_epoch();
  (void)b.compute_stamp();
  EXPECT_GE(a.resolve(stamp), before);
  EXPECT_LE(a.resolve(stamp), after);
  EXPECT_THROW(b.resolve(stamp), std::logic_error) << "another clock's stamp";
  a.begin_epoch();
  (void)a.compute_stamp();  // takes the stamp's slot again
  EXPECT_THROW(a.resolve(stamp), std::logic_error) << "a stamp of an earlier epoch";
  const Stamp host = host_stamp();
  EXPECT_EQ(a.resolve(host), host.seconds);
  EXPECT_EQ(b.resolve(host), host.seconds);
}

// Communicator a's collective is posted in a's step; b's step begins (a new epoch, its own
// stamps) before a's collective is waited for and a's step records end: a's times are still its
// own.
TEST(StampClock, OneCommunicatorsStepLeavesAnothersStampsAlone) {
  StreamOrderedCommunicator a, b;
  CollectiveRecorder a_records, b_records;
  float x = 1.0f;
  a_records.begin(a);
  const double before = wall_seconds();
  CommRequest request = a.iall_reduce_sum(&x, 1, DType::F32);
  const double posted = wall_seconds();
  pause();
  b_records.begin(b);
  b.all_reduce_sum(&x, 1, DType::F32);
  const double waited = wall_seconds();
  request.wait();
  std::vector<CollectiveTimes> times;
  ASSERT_NO_THROW(times = a_records.end());
  ASSERT_EQ(times.size(), 1u);
  EXPECT_GE(times[0].posted, before);
  EXPECT_LE(times[0].posted, posted);
  EXPECT_LE(times[0].completed, posted);
  ASSERT_TRUE(times[0].waited);
  EXPECT_GE(times[0].wait_begin, waited);
  EXPECT_GE(times[0].wait_end, times[0].wait_begin);
  const std::vector<CollectiveTimes> others = b_records.end();
  ASSERT_EQ(others.size(), 1u);
  EXPECT_GE(others[0].posted, posted + kPause);
}

// A traced span open across a communicator's step records (its begin and end on the tracer's
// clock, the collective's on the communicator's) keeps its length.
TEST(StampClock, ATracedSpanOutlivesACommunicatorsStep) {
  Tracer tracer;
  tracer.configure(true, {{1, 1}}, 0);
  tracer.begin_step(0, 1);
  const RunContext context{&tracer, nullptr, nullptr};
  StreamOrderedCommunicator comm;
  CollectiveRecorder records;
  float x = 1.0f;
  const double before = wall_seconds();
  {
    Phase span(context, PhaseSpec("span").span(SpanKind::Compute));
    pause();
    records.begin(comm);
    comm.all_reduce_sum(&x, 1, DType::F32);
    EXPECT_EQ(records.end().size(), 1u);
  }
  const double after = wall_seconds();
  std::vector<TraceEvent> events;
  ASSERT_NO_THROW(events = tracer.take());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_GE(events[0].begin, before);
  EXPECT_LE(events[0].begin, before + kPause);
  EXPECT_GE(events[0].end - events[0].begin, kPause);
  EXPECT_LE(events[0].end, after);
}

}  // namespace
}  // namespace zm
