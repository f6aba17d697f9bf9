// A Phase is one named piece of a run (the step, a unit's forward, a checkpoint write). One scope
// gives it, as its PhaseSpec declares: a Kokkos Tools region "zeromini::<region>" (always; a
// pointer check when no tool is loaded), a span for the run's span observer (span()), the run's
// phase in the watchdog's messages (watched()) and a deadline (deadline()), and a timer, device
// work included (timed()). E.g.
//   Phase phase(context, PhaseSpec("forward").timed(record.times.forward));
// The comm and io layers, which no RunContext reaches, keep the narrower BlockingRegion
// (comm/watchdog.hpp) for their blocking calls.
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
  // The run's phase in the watchdog's messages ("checkpoint write after step 12"), restored at
  // the end.
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
