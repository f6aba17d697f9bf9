// The NCCL backend's guard against hangs, through its seam: a fake device (which events have
// fired, the communicator's asynchronous error, aborts counted) and a fake clock drive the same
// DeviceOpMonitor that the backend runs with CUDA events, ncclCommGetAsyncError and ncclCommAbort;
// and the watchdog's thread calls a watched device check until it is unwatched.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <thread>

#include "comm/device_op_monitor.hpp"
#include "comm/watchdog.hpp"
#include "common/test_watchdog.hpp"

namespace {

struct FakeDevice : zm::DeviceOpMonitor::Device {
  std::set<void*> fired, released;
  std::string error;
  int aborts = 0;
  bool complete(void* done) override { return fired.count(done) > 0; }
  void release(void* done) override { released.insert(done); }
  std::string async_error() override { return error; }
  void abort() override { ++aborts; }
};

class MonitorTest : public ::testing::Test {
 protected:
  FakeDevice device;
  double now = 100.0;
  zm::DeviceOpMonitor monitor{device, 3, "NCCL", [this] { return now; }};
  int events[4] = {};
  void* event(int i) { return &events[i]; }
  void SetUp() override { monitor.set_timeout(5.0); }
};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_F(MonitorTest, CollectivesThatCompleteInTimeAreRetired) {
  monitor.posted("all_gather", 1000, 2, event(0));
  monitor.posted("reduce_scatter", 500, 4, event(1));
  now += 4.0;
  EXPECT_EQ(monitor.poll(), "");
  EXPECT_EQ(monitor.in_flight(), 2u);
  device.fired = {event(0), event(1)};
  EXPECT_EQ(monitor.poll(), "");
  EXPECT_EQ(monitor.in_flight(), 0u);
  EXPECT_EQ(device.released, (std::set<void*>{event(0), event(1)}));
  now += 60.0;  // nothing in flight: no timeout however long the wait
  EXPECT_EQ(monitor.poll(), "");
  EXPECT_EQ(device.aborts, 0);
}

TEST_F(MonitorTest, ACollectiveLongerThanTheTimeoutAbortsNamingRankOpAndBytes) {
  monitor.posted("all_reduce", 100, 4, event(0));
  monitor.posted("all_gather", 4096, 2, event(1));
  device.fired = {event(0)};
  now += 5.5;
  const std::string failure = monitor.poll();
  EXPECT_TRUE(contains(failure, "rank 3")) << failure;
  EXPECT_TRUE(contains(failure, "NCCL all_gather #2 of 8192 bytes (4096 elements)")) << failure;
  EXPECT_TRUE(contains(failure, "comm.timeout_s = 5")) << failure;
  EXPECT_TRUE(contains(failure, "communicator was aborted")) << failure;
  EXPECT_EQ(device.aborts, 1);
  EXPECT_EQ(monitor.poll(), "");  // aborted once; the job is ending
  EXPECT_EQ(device.aborts, 1);
}

TEST_F(MonitorTest, TheTimeoutCountsFromTheOldestCollectiveStillInFlight) {
  monitor.posted("all_gather", 10, 4, event(0));
  now += 4.0;
  monitor.posted("all_gather", 10, 4, event(1));
  device.fired = {event(0)};
  now += 4.0;  // 8 s since the first, 4 s since the second
  EXPECT_EQ(monitor.poll(), "");
  now += 1.5;
  EXPECT_TRUE(contains(monitor.poll(), "all_gather #2")) << "the second one timed out";
}

TEST_F(MonitorTest, AnAsynchronousErrorAbortsAtOnce) {
  monitor.posted("reduce_scatter", 256, 4, event(0));
  device.error = "remote process exited or there was a network error";
  const std::string failure = monitor.poll();
  EXPECT_TRUE(contains(failure, "during reduce_scatter #1 of 1024 bytes")) << failure;
  EXPECT_TRUE(contains(failure, "network error")) << failure;
  EXPECT_EQ(device.aborts, 1);
}

TEST_F(MonitorTest, AnErrorWithNothingInFlightIsReportedToo) {
  device.error = "unhandled system error";
  EXPECT_TRUE(contains(monitor.poll(), "with no collective in flight"));
  EXPECT_EQ(device.aborts, 1);
}

TEST_F(MonitorTest, ALongerTimeoutTakesEffect) {
  monitor.set_timeout(60.0);
  monitor.posted("broadcast", 1, 4, event(0));
  now += 30.0;
  EXPECT_EQ(monitor.poll(), "");
  EXPECT_EQ(device.aborts, 0);
}

TEST(WatchedDevice, TheWatchdogThreadCallsTheCheckUntilUnwatched) {
  zm::testing::watchdog().arm(300.0);
  std::atomic<int> calls{0};
  const int id = zm::testing::watchdog().watch_device([&calls] {
    ++calls;
    return std::string();
  });
  for (int i = 0; i < 50 && calls < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_GE(calls.load(), 2);
  zm::testing::watchdog().unwatch_device(id);
  const int after = calls.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(calls.load(), after);
}

}  // namespace
