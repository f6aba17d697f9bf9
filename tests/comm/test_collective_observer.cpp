// What a Communicator tells its observer (comm/collective_observer.hpp): every collective posted
// while observed, with its op, tag and ring bytes; a wait on one still in flight (blocking for a
// blocking collective); a completion seen without a wait; and nothing once observation stops.
// Several observers: each is told, those that do not follow of the posts alone.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "comm/collective_observer.hpp"
#include "common/test_watchdog.hpp"
#include "core/timer.hpp"

namespace zm {
namespace {

class Log final : public CollectiveObserver {
 public:
  std::vector<std::string> told;
  std::vector<PostedCollective> posts;
  StreamMark mark_stream(void*) override {
    told.push_back("mark");
    return {};
  }
  void posted(const PostedCollective& c) override {
    posts.push_back(c);
    told.push_back("posted " + std::to_string(c.id) + (c.complete ? " complete" : ""));
  }
  void completed(int64_t id) override { told.push_back("completed " + std::to_string(id)); }
  void wait_begins(int64_t id, bool blocking) override {
    told.push_back("wait " + std::to_string(id) + (blocking ? " blocking" : ""));
  }
  void wait_ended(int64_t id) override { told.push_back("waited " + std::to_string(id)); }
};

TEST(CollectiveObserver, IsToldOfPostsWaitsAndCompletions) {
  auto comm = make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  Kokkos::View<float*, MemSpace> data("data", 256);
  comm->all_reduce_sum(data.data(), data.extent(0), DType::F32);  // unobserved
  Log log;
  comm->observe(&log);
  const double before = wall_seconds();
  comm->all_reduce_sum(data.data(), data.extent(0), DType::F32, {3, CommPurpose::Stats});
  ASSERT_EQ(log.posts.size(), 1u);
  const PostedCollective& first = log.posts[0];
  const int64_t id = first.id;
  EXPECT_EQ(id, 1);  // the communicator's second collective
  EXPECT_EQ(first.op, CommOp::AllReduce);
  EXPECT_EQ(first.tag.unit, 3);
  EXPECT_EQ(first.tag.purpose, CommPurpose::Stats);
  EXPECT_DOUBLE_EQ(first.bytes, ring_bytes(CommOp::AllReduce, 256 * 4.0, comm->size()));
  EXPECT_GE(first.host_seconds, before);
  EXPECT_FALSE(first.stream_ordered);
  const auto posted = [&](int64_t n) {
    return "posted " + std::to_string(n) + (log.posts.back().complete ? " complete" : "");
  };
  // Blocking: waited for from its post, unless the backend completed it when posting it.
  if (first.complete) {
    EXPECT_EQ(log.told, (std::vector<std::string>{posted(id)}));
  } else {
    EXPECT_EQ(log.told, (std::vector<std::string>{posted(id), "wait 1 blocking", "waited 1"}));
  }

  // Posted, left to complete while the rank works (progress notices it), then waited for: the
  // wait is not told, the completion is.
  log.told.clear();
  CommRequest request = comm->iall_reduce_sum(data.data(), data.extent(0), DType::F32);
  const double until = wall_seconds() + 2.0;
  while (!log.posts.back().complete && log.told.size() < 2 && wall_seconds() < until) {
    comm->progress();
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  request.wait();
  if (!log.posts.back().complete) {
    EXPECT_EQ(log.told, (std::vector<std::string>{posted(2), "completed 2"}));
  }

  comm->barrier();
  EXPECT_EQ(log.posts.back().op, CommOp::Barrier);
  EXPECT_EQ(log.posts.back().id, 3);
  EXPECT_EQ(log.told.back(), "waited 3");

  // Observation ends: nothing more is told, and requests of the observation are not either.
  log.told.clear();
  CommRequest late = comm->iall_reduce_sum(data.data(), data.extent(0), DType::F32);
  comm->unobserve(&log);
  late.wait();
  comm->all_reduce_sum(data.data(), data.extent(0), DType::F32);
  EXPECT_EQ(log.told, (std::vector<std::string>{posted(4)}));
}

// A count of posts (follows() false) beside a follower: both told of every post, only the
// follower of waits, completions and barriers; each removed alone.
class PostCount final : public CollectiveObserver {
 public:
  bool follows() const override { return false; }
  void posted(const PostedCollective& c) override {
    ++posts;
    whole_bytes += c.whole_buffer_bytes;
  }
  int posts = 0;
  double whole_bytes = 0;
};

TEST(CollectiveObserver, FansOutToEveryObserver) {
  auto comm = make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  Kokkos::View<float*, MemSpace> data("data", 256);
  PostCount count;
  Log log;
  comm->observe(&count);
  comm->observe(&log);
  comm->all_reduce_sum(data.data(), data.extent(0), DType::F32);
  comm->barrier();
  EXPECT_EQ(count.posts, 1);
  EXPECT_EQ(count.whole_bytes, 256 * 4.0);
  EXPECT_EQ(log.posts.size(), 2u);
  EXPECT_EQ(log.told.back(), "waited " + std::to_string(log.posts.back().id));
  comm->unobserve(&log);
  comm->all_reduce_sum(data.data(), data.extent(0), DType::F32);
  EXPECT_EQ(count.posts, 2);
  EXPECT_EQ(log.posts.size(), 2u);
  comm->unobserve(&count);
  comm->all_reduce_sum(data.data(), data.extent(0), DType::F32);
  EXPECT_EQ(count.posts, 2);
}

}  // namespace
}  // namespace zm
