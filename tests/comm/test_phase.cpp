// A Phase does what its PhaseSpec declares, and only that: a timer, a span told to the run's
// span observer while it observes, the watchdog's run phase for its scope.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "comm/phase.hpp"
#include "comm/watchdog.hpp"
#include "common/test_watchdog.hpp"
#include "core/spans.hpp"

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

// An observer that keeps what it is told, observing when `on`.
class Spans final : public zm::SpanObserver {
 public:
  struct Span {
    zm::SpanKind kind;
    std::string name;
    int32_t unit;
    int64_t begin, end;
  };
  bool on = false;
  std::vector<Span> spans;
  bool observing() const override { return on; }
  zm::SpanMark mark() override { return zm::SpanMark{marks_++}; }
  void span(zm::SpanKind kind, const std::string& name, int32_t unit, zm::SpanMark begin,
            zm::SpanMark end) override {
    spans.push_back({kind, name, unit, begin.id, end.id});
  }
  void host_span(zm::SpanKind, const std::string&, int32_t, double, double) override {}

 private:
  int64_t marks_ = 0;
};

TEST(Phase, ASpanIsToldOnlyWhileObserved) {
  Spans observer;
  const zm::RunContext context{&observer, nullptr, nullptr};
  { zm::Phase phase(context, zm::PhaseSpec("forward block 0").span(zm::SpanKind::Compute, 4)); }
  EXPECT_TRUE(observer.spans.empty());

  observer.on = true;
  {
    zm::Phase step(context, zm::PhaseSpec("step").span(zm::SpanKind::Step, -1, "step 2"));
    { zm::Phase phase(context, zm::PhaseSpec("forward block 0").span(zm::SpanKind::Compute, 4)); }
    { zm::Phase phase(context, zm::PhaseSpec("forward")); }  // a region only: no span
  }
  ASSERT_EQ(observer.spans.size(), 2u);
  EXPECT_EQ(observer.spans[0].name, "forward block 0");  // the region's name
  EXPECT_EQ(observer.spans[0].kind, zm::SpanKind::Compute);
  EXPECT_EQ(observer.spans[0].unit, 4);
  EXPECT_EQ(observer.spans[1].name, "step 2");
  EXPECT_EQ(observer.spans[1].kind, zm::SpanKind::Step);
  EXPECT_EQ(observer.spans[1].unit, -1);
  // Each span between its own marks: the step's enclose the block's.
  EXPECT_LT(observer.spans[1].begin, observer.spans[0].begin);
  EXPECT_LT(observer.spans[0].begin, observer.spans[0].end);
  EXPECT_LT(observer.spans[0].end, observer.spans[1].end);
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
