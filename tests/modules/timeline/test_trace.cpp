// The Tracer as the run's span observer (trace.hpp): spans of the phases only in traced steps,
// host-timed spans (host-device copies) on the same window, and the deck keys that choose the
// steps (output.trace_steps, a list of steps and ranges).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "comm/phase.hpp"
#include "core/deck.hpp"
#include "core/error.hpp"
#include "core/timer.hpp"
#include "modules/timeline/trace.hpp"

namespace {

std::string error_of(const std::string& text) {
  try {
    zm::parse_deck(text, "bad.toml");
  } catch (const zm::Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Tracer, RecordsSpansOnlyInATracedStep) {
  zm::Tracer tracer;
  const zm::RunContext context{&tracer, nullptr, nullptr};
  tracer.configure(true, {{2, 2}}, 0);
  tracer.begin_step(3, 1);  // not a traced step
  { zm::Phase phase(context, zm::PhaseSpec("forward block 0").span(zm::SpanKind::Compute, 4)); }
  EXPECT_TRUE(tracer.take().empty());

  tracer.begin_step(3, 2);
  tracer.micro_step(1);
  { zm::Phase phase(context, zm::PhaseSpec("forward block 0").span(zm::SpanKind::Compute, 4)); }
  { zm::Phase phase(context, zm::PhaseSpec("step").span(zm::SpanKind::Step, -1, "step 2")); }
  { zm::Phase phase(context, zm::PhaseSpec("forward")); }  // a region only: no span
  const std::vector<zm::TraceEvent> events = tracer.take();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_STREQ(events[0].name, "forward block 0");
  EXPECT_EQ(events[0].kind, static_cast<int32_t>(zm::TraceKind::Compute));
  EXPECT_EQ(events[0].unit, 4);
  EXPECT_EQ(events[0].micro, 1);
  EXPECT_EQ(events[0].stage, 3);
  EXPECT_EQ(events[0].step, 2);
  EXPECT_LE(events[0].begin, events[0].end);
  EXPECT_STREQ(events[1].name, "step 2");
  EXPECT_EQ(events[1].kind, static_cast<int32_t>(zm::TraceKind::Step));
  EXPECT_EQ(events[1].micro, -1);
}

TEST(Tracer, KeepsHostTimedSpans) {
  zm::Tracer tracer;
  tracer.configure(true, {{1, 1}}, 2);
  tracer.begin_step(0, 1);
  const double now = zm::wall_seconds();
  ASSERT_TRUE(tracer.observing());
  tracer.host_span(zm::SpanKind::Transfer, "d2h 1024 B", 5, now, now + 1e-3);
  const std::vector<zm::TraceEvent> events = tracer.take();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, static_cast<int32_t>(zm::TraceKind::Transfer));
  EXPECT_EQ(events[0].unit, 5);
  EXPECT_EQ(events[0].rank, 2);
  EXPECT_DOUBLE_EQ(events[0].begin, now);
  EXPECT_DOUBLE_EQ(events[0].end, now + 1e-3);
}

// A span begun in one window and ended in the next is dropped: its first stamp is gone.
TEST(Tracer, DropsASpanAcrossWindows) {
  zm::Tracer tracer;
  tracer.configure(true, {{1, 2}}, 0);
  tracer.begin_step(0, 1);
  const zm::SpanMark begin = tracer.mark();
  tracer.begin_step(0, 2);
  tracer.span(zm::SpanKind::Compute, "late", -1, begin, tracer.mark());
  EXPECT_TRUE(tracer.take().empty());
}

TEST(TraceKeys, TraceStepsAreStepsAndRanges) {
  const zm::Deck deck = zm::parse_deck("[output]\ntrace = true\ntrace_steps = 5\n", "d.toml");
  EXPECT_TRUE(deck.value<bool>("output.trace"));
  EXPECT_EQ(deck.value<std::string>("output.trace_steps"), "5");
  EXPECT_EQ(zm::parse_deck("", "d.toml").value<std::string>("output.trace_steps"), "2-3");
  EXPECT_EQ(error_of("[output]\ntrace_steps = \"3-2\"\n"),
            "bad.toml:2:1: output.trace_steps = \"3-2\": the range 3-2 runs backwards: expected a "
            "step number (from 1) or a string of steps and ranges such as \"2-3,10\"");
  EXPECT_EQ(error_of("[output]\ntrace_steps = \"2,,4\"\n"),
            "bad.toml:2:1: output.trace_steps = \"2,,4\": no step number (from 1) at character 3: "
            "expected a step number (from 1) or a string of steps and ranges such as \"2-3,10\"");
  EXPECT_EQ(error_of("[output]\ntrace_steps = 0\n"),
            "bad.toml:2:1: output.trace_steps = 0: out of range: expected a step number (from 1) "
            "or a string of steps and ranges such as \"2-3,10\"");
}

}  // namespace

TEST(TraceSteps, StepListsAreStepsAndRanges) {
  std::vector<zm::StepRange> ranges;
  EXPECT_EQ(zm::parse_step_ranges("2-3,10", &ranges), "");
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[0].first, 2);
  EXPECT_EQ(ranges[0].last, 3);
  EXPECT_EQ(ranges[1].first, 10);
  EXPECT_EQ(ranges[1].last, 10);
  EXPECT_EQ(zm::parse_step_ranges("3-2", &ranges), "the range 3-2 runs backwards");
  EXPECT_EQ(zm::parse_step_ranges("2,,4", &ranges), "no step number (from 1) at character 3");
}
