// What a run's code reaches besides its arguments: the observer of its spans (core/spans.hpp),
// the watchdog of comm.timeout_s and the memory ledger. The program makes one
// (miniapp/cmd_run.cpp) and passes it down: run_training (where a module may give it a span
// observer, train/training_extensions.hpp), the Trainer, the model, and every Phase. A default
// RunContext holds none of them: its phases are Kokkos Tools regions and timers only (tests and
// benchmarks that build a Trainer or a model directly).
#pragma once

namespace zm {

class SpanObserver;
class Watchdog;
class MemoryLedger;

struct RunContext {
  SpanObserver* spans = nullptr;   // told of the phases' spans; null: nobody
  Watchdog* watchdog = nullptr;    // phase names and deadlines; null: unwatched
  MemoryLedger* ledger = nullptr;  // the figures a run reports; null: not read
  double estimated_step_seconds =
      0;  // the planner's estimate of a step (run_estimate.hpp); 0: none
};

}  // namespace zm
