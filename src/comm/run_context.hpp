// What a run's code reaches besides its arguments, passed down from the program to the Trainer,
// the model and every Phase. A default RunContext holds none of them (tests and benchmarks): its
// phases are Kokkos Tools regions and timers only.
#pragma once

#include <map>
#include <string>

namespace zm {

class SpanObserver;
class Watchdog;
class MemoryLedger;

// Figures by name that the steps before training give a run (train/command_extensions.hpp).
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
