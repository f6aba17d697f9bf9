// Spans: the named pieces of a run's work, each with a begin and an end (a Phase, comm/phase.hpp;
// a state tier's copy, zero/state_tier.hpp), told to the run's SpanObserver when it has one
// (RunContext::spans). What observes them (a module) decides whether to keep and how to time them.
#pragma once

#include <cstdint>
#include <string>

namespace zm {

// Step: a whole optimizer step; Compute: a piece of it (a unit's forward or backward, the
// optimizer); Io: a file written; Transfer: a copy between device and host memory; ForwardOnly:
// forward passes between steps that change nothing (a loss measured on other data); Storage: a
// transfer between host memory and a drive (state kept in MemCategory::Storage).
enum class SpanKind : int32_t { Step = 0, Compute, Io, Transfer, ForwardOnly, Storage };

// A point of the work queued so far, as the observer took it (SpanObserver::mark); opaque here.
struct SpanMark {
  int64_t id = -1;  // -1: none
};

class SpanObserver {
 public:
  virtual ~SpanObserver() = default;
  // Whether spans are wanted now: a Phase takes no mark and reports nothing otherwise.
  virtual bool observing() const = 0;
  // When the work queued so far on the default execution space is done (on a GPU, later than
  // the host reaches this call).
  virtual SpanMark mark() = 0;
  // A span between two marks: its kind, its name and the model unit it works on (-1: none).
  virtual void span(SpanKind kind, const std::string& name, int32_t unit, SpanMark begin,
                    SpanMark end) = 0;
  // A span timed on the host clock (core/timer.hpp's wall_seconds), e.g. a copy on a stream of
  // its own, from its issue to the wait that saw it done.
  virtual void host_span(SpanKind kind, const std::string& name, int32_t unit, double begin,
                         double end) = 0;
  // The micro-step the compute spans that follow belong to (0-based).
  virtual void micro_step(int64_t /*micro*/) {}
};

}  // namespace zm
