// What a run's code reaches besides its arguments: the observer of its spans (core/spans.hpp),
// the watchdog of comm.timeout_s, the memory ledger and the run's figures. The program makes one
// (miniapp/cmd_run.cpp) and passes it down: run_training (where a module may give it a span
// observer, train/training_extensions.hpp), the Trainer, the model, and every Phase. A default
// RunContext holds none of them: its phases are Kokkos Tools regions and timers only (tests and
// benchmarks that build a Trainer or a model directly).
#pragma once

#include <map>
#include <string>

namespace zm {

class SpanObserver;
class Watchdog;
class MemoryLedger;

// Figures by name that the steps before training give a run (RunCommandExtension::
// before_first_step, train/command_extensions.hpp), for what runs around its steps to read.
using RunFigures = std::map<std::string, double>;

struct RunContext {
  SpanObserver* spans = nullptr;        // told of the phases' spans; null: nobody
  Watchdog* watchdog = nullptr;         // phase names and deadlines; null: unwatched
  MemoryLedger* ledger = nullptr;       // the figures a run reports; null: not read
  const RunFigures* figures = nullptr;  // given before training; null: none

  // The run's figure `name`, or `absent` where it has none.
  double figure(const std::string& name, double absent) const {
    if (!figures) return absent;
    const auto found = figures->find(name);
    return found == figures->end() ? absent : found->second;
  }
};

}  // namespace zm
