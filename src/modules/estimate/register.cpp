// The module's registration (core/modules.hpp): its deck key, its step before the first step of
// `zeromini run` (the estimate and the warning) and the first-step notices of every run.
#include <fmt/format.h>

#include <algorithm>

#include "comm/communicator.hpp"
#include "core/deck_keys.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/registry.hpp"
#include "modules/estimate/first_step_notice.hpp"
#include "modules/estimate/machine_measurements.hpp"
#include "modules/estimate/measure_machine.hpp"
#include "modules/estimate/run_estimate.hpp"
#include "train/command_extensions.hpp"
#include "train/training_extensions.hpp"

namespace zm {

namespace {

ZM_REGISTRY(MachineMeasurement, add_measurement, machine_measurements)

// This machine as measured now, with what the modules measure of it for this deck.
Machine measured_machine(const Deck& deck, const RunInvocation& run, Communicator& comm) {
  Machine machine = measure_machine(comm, run.nodes);
  for (const MachineMeasurement& measure : machine_measurements()) {
    const std::string words = measure(deck, comm, machine);
    if (!words.empty()) machine.description += "; " + words;
  }
  return machine;
}

// Before the first step: the planner's estimate of a step and of the run, printed on the
// --machine file, else on this machine measured now; the run's figures get the longest stage's
// step estimate. A deck the planner cannot price still runs: the line says why there is no
// estimate.
class EstimateBeforeTraining final : public RunCommandExtension {
 public:
  std::vector<CommandOption> options() override { return {}; }

  RunFigures before_first_step(const Deck& deck, const RunInvocation& run,
                               Communicator& comm) override {
    const Machine machine =
        run.machine.empty() ? measured_machine(deck, run, comm) : load_machine(run.machine);
    const std::string source = run.machine.empty()
                                   ? fmt::format("measured at start-up: {}", machine.description)
                                   : run.machine;
    try {
      const RunEstimate estimate = estimate_run(deck, machine, comm.size(), source);
      report_run_estimate(deck, estimate);
      return {{kEstimatedStepFigure,
               *std::max_element(estimate.step_seconds.begin(), estimate.step_seconds.end())}};
    } catch (const Error& error) {
      log_root("Estimate: not available ({})\n", error.what());
      return {};
    }
  }
};

}  // namespace

void add_machine_measurement(MachineMeasurement measurement) {
  add_measurement(std::move(measurement));
}

void register_module_estimate() {
  add_deck_keys({deck_keys::number(
      "estimate", "output", "long_run_s", 3600, 0, false, 1e9, false,
      "seconds: a run the planner estimates longer than this (on the --machine file, else on "
      "this machine as measured at start-up) warns before its first step, naming the key that "
      "made it long; 0: never")});
  add_run_command_extension(std::make_unique<EstimateBeforeTraining>());
  add_training_extension(make_first_step_notices);
}

}  // namespace zm
