// A Phase is one named piece of a run: the step, a unit's forward, the optimizer, a checkpoint
// write, the agreement to stop. One scope does the four things such a piece may need:
//   - a Kokkos Tools region "zeromini::<region>", always (a tool connector such as
//     space-time-stack or NVTX shows zeromini's structure; the cost is a pointer check when no
//     tool is loaded);
//   - a span (span()), told to the run's span observer (core/spans.hpp) while it observes;
//   - the watchdog: the run's phase named in its messages (watched()), restored when the scope
//     ends, and a deadline (deadline()): a wait longer than comm.timeout_s ends the job;
//   - a timer (timed()): the seconds from start to end, device work included (fences at both
//     ends), added to a total.
// What a Phase does is declared by its PhaseSpec, e.g.
//   Phase phase(context, PhaseSpec("forward").timed(record.times.forward));
//   Phase phase(context, PhaseSpec("checkpoint").span(SpanKind::Io)
//                            .watched("checkpoint write after step 12"));
//
// The comm and io layers keep the narrower BlockingRegion (comm/watchdog.hpp) for their blocking
// calls: a wait inside a collective or a file operation is a leaf of a phase, with a deadline and
// a collective number but nothing to time or show as a span of its own (collectives are told
// to their communicator's observer, comm/collective_observer.hpp), and those layers are called
// where no RunContext reaches.
#pragma once

#include <cstdint>
#include <string>

#include "comm/run_context.hpp"
#include "comm/watchdog.hpp"
#include "core/spans.hpp"

namespace zm {

struct PhaseSpec {
  explicit PhaseSpec(std::string region_name) : region(std::move(region_name)) {}

  // A span of `kind` named `name` (the region's name when empty), for unit `unit`.
  PhaseSpec& span(SpanKind kind, int32_t unit = -1, std::string name = "") {
    reports_span = true;
    span_kind = kind;
    span_unit = unit;
    span_name = std::move(name);
    return *this;
  }
  // The run's phase as the watchdog's messages name it ("checkpoint write after step 12").
  PhaseSpec& watched(std::string run_phase) {
    watch = std::move(run_phase);
    return *this;
  }
  // A deadline of comm.timeout_s on the whole phase; `operation` names it when it expires.
  PhaseSpec& deadline(std::string operation, WaitKind kind = WaitKind::Blocking) {
    wait = std::move(operation);
    wait_kind = kind;
    return *this;
  }
  // Adds the phase's seconds to `total`.
  PhaseSpec& timed(double& total) {
    seconds = &total;
    return *this;
  }

  std::string region;
  bool reports_span = false;
  SpanKind span_kind = SpanKind::Compute;
  int32_t span_unit = -1;
  std::string span_name;
  std::string watch;
  std::string wait;
  WaitKind wait_kind = WaitKind::Blocking;
  double* seconds = nullptr;
};

class Phase {
 public:
  Phase(const RunContext& context, PhaseSpec spec);
  ~Phase();
  Phase(const Phase&) = delete;
  Phase& operator=(const Phase&) = delete;

 private:
  RunContext context_;
  PhaseSpec spec_;
  bool spanned_ = false;
  bool region_ = false;
  SpanMark begin_;
  double started_ = 0.0;
  std::string previous_watch_;
};

}  // namespace zm
