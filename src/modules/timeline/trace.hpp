// The timeline of selected steps (output.trace): the run's spans (core/spans.hpp) and its
// collectives, recorded in the traced steps.
//
// The Tracer is the run's span observer (RunContext::spans) while trace.json is written
// (trace_file.hpp); it observes only in traced steps. It holds the events of one window: from the
// start of a traced step to the start of the next step (so a checkpoint written after the step
// belongs to it). The trace windows' step hook (timeline_run.cpp) takes them and starts the next
// window. Its spans are stamped on its own clock, whose epoch begins with each traced window: no
// communicator's step records reset it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/deck.hpp"
#include "core/spans.hpp"
#include "modules/timeline/stamp_clock.hpp"
#include "modules/timeline/step_ranges.hpp"

namespace zm {

// The kinds of the timeline's events: the spans' (SpanKind), the collectives and the waits on
// them. Transfer: a host-device copy, on its own track.
enum class TraceKind : int32_t {
  Step = 0,
  Compute,
  Wait,
  Io,
  Collective,
  Transfer,
  Evaluation,
  Storage
};
TraceKind trace_kind(SpanKind kind);

// One event, plain data so that ranks can send them as bytes.
struct TraceEvent {
  double begin = 0.0, end = 0.0;  // seconds on this rank's clock
  double bytes = 0.0;             // collectives: ring bytes sent per rank
  int32_t kind = 0;               // TraceKind
  int32_t stage = 0, step = 0;    // step: 1-based
  int32_t unit = -1, micro = -1;  // a unit's forward or backward: its index and micro-step
  int32_t op = -1, purpose = -1;  // collectives and waits: CommOp and CommPurpose
  int32_t rank = 0;
  int64_t id = -1;  // collectives and waits: the collective's number on its rank
  char name[48] = {};
};

class Tracer final : public SpanObserver {
 public:
  // Which steps (1-based) are traced; none when disabled.
  void configure(bool enabled, std::vector<StepRange> steps, int rank);
  bool enabled() const { return enabled_; }
  // A new window at step `step` (1-based) of `stage`: active when the step is traced. The
  // previous window's stamps are resolved first.
  void begin_step(int stage, int64_t step);
  bool active() const { return active_; }
  int32_t stage() const { return stage_; }
  int32_t step() const { return step_; }

  // SpanObserver: observing while active; marks are stamps on the tracer's clock, a span is an
  // event of the current window (its device stamps unresolved until resolve_stamps()).
  bool observing() const override { return active_; }
  SpanMark mark() override;
  void span(SpanKind kind, const std::string& name, int32_t unit, SpanMark begin,
            SpanMark end) override;
  void host_span(SpanKind kind, const std::string& name, int32_t unit, double begin,
                 double end) override;
  void micro_step(int64_t micro) override { micro_ = static_cast<int32_t>(micro); }

  // Records an event of the current window, its times already in seconds (nothing when
  // inactive).
  void add_resolved(TraceEvent event);
  // Turns the window's device stamps into seconds (after the step's work is done).
  void resolve_stamps();
  // The window's events, resolved; the window closes.
  std::vector<TraceEvent> take();

 private:
  struct Pending {
    TraceEvent event;
    Stamp begin, end;
  };
  void add(TraceKind kind, const std::string& name, Stamp begin, Stamp end, int32_t unit);
  bool enabled_ = false, active_ = false;
  std::vector<StepRange> steps_;
  int32_t rank_ = 0, stage_ = 0, step_ = 0, micro_ = -1;
  std::vector<Pending> pending_;
  std::vector<TraceEvent> events_;
  StampClock clock_;
  // The current window's marks: mark id first_mark_ + i is marks_[i]; earlier ids are stale.
  std::vector<Stamp> marks_;
  int64_t first_mark_ = 0;
};

// Copies `text` into a fixed-size event name, truncating.
void set_event_name(TraceEvent& event, const std::string& text);

}  // namespace zm
