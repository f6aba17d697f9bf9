// A Phase does what its PhaseSpec declares, and only that: a timer, a trace span while the
// tracer is in a traced step, the watchdog's run phase for its scope.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "comm/phase.hpp"
#include "comm/watchdog.hpp"
#include "common/test_watchdog.hpp"
#include "core/trace.hpp"

namespace {

// The watchdog's current run phase (set_phase returns the previous one; it is put back).
std::string current_run_phase(zm::Watchdog& watchdog) {
  std::string now = watchdog.set_phase("probe");
  watchdog.set_phase(now);
  return now;
}

TEST(Phase, TimedAddsItsSecondsToTheTotal) {
  double total = 0.0;
  const zm::RunContext none;
  for (int i = 0; i < 2; ++i) {
    zm::Phase phase(none, zm::PhaseSpec("sleep").timed(total));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_GE(total, 0.040);
  EXPECT_LT(total, 5.0);
}

TEST(Phase, TracedAddsASpanOnlyInATracedStep) {
  zm::Tracer tracer;
  const zm::RunContext context{&tracer, nullptr, nullptr};
  tracer.configure(true, {{2, 2}}, 0);
  tracer.begin_step(3, 1);  // not a traced step
  { zm::Phase phase(context, zm::PhaseSpec("forward block 0").traced(zm::TraceKind::Compute, 4)); }
  EXPECT_TRUE(tracer.take().empty());

  tracer.begin_step(3, 2);
  { zm::Phase phase(context, zm::PhaseSpec("forward block 0").traced(zm::TraceKind::Compute, 4)); }
  { zm::Phase phase(context, zm::PhaseSpec("step").traced(zm::TraceKind::Step, -1, "step 2")); }
  { zm::Phase phase(context, zm::PhaseSpec("forward")); }  // a region only: no span
  const std::vector<zm::TraceEvent> events = tracer.take();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_STREQ(events[0].name, "forward block 0");
  EXPECT_EQ(events[0].kind, static_cast<int32_t>(zm::TraceKind::Compute));
  EXPECT_EQ(events[0].unit, 4);
  EXPECT_EQ(events[0].stage, 3);
  EXPECT_EQ(events[0].step, 2);
  EXPECT_LE(events[0].begin, events[0].end);
  EXPECT_STREQ(events[1].name, "step 2");
  EXPECT_EQ(events[1].kind, static_cast<int32_t>(zm::TraceKind::Step));
}

TEST(Phase, WatchedNamesTheRunPhaseForItsScope) {
  zm::Watchdog& watchdog = zm::testing::watchdog();
  const zm::RunContext context{nullptr, &watchdog, nullptr};
  const std::string outside = current_run_phase(watchdog);
  {
    zm::Phase phase(context, zm::PhaseSpec("checkpoint").watched("checkpoint write after step 2"));
    EXPECT_EQ(current_run_phase(watchdog), "checkpoint write after step 2");
    {
      zm::Phase inner(context, zm::PhaseSpec("forward"));  // names nothing: the outer one stays
      EXPECT_EQ(current_run_phase(watchdog), "checkpoint write after step 2");
    }
    {
      zm::Phase inner(context, zm::PhaseSpec("results").watched("results write after step 2"));
      EXPECT_EQ(current_run_phase(watchdog), "results write after step 2");
    }
    EXPECT_EQ(current_run_phase(watchdog), "checkpoint write after step 2");
  }
  EXPECT_EQ(current_run_phase(watchdog), outside);
}

}  // namespace
