// What a module adds to a run of the trainer (core/modules.hpp), beside what `zeromini run` adds
// (train/command_extensions.hpp): outputs of its own beside results.h5, opened once results.h5 is
// and finished before its last write, a span observer for the run's phases, a check before each
// stage, and step hooks around each stage's steps, which may measure the stage and add figures to
// its results (io/stage_figures.hpp). run_training (train/run.hpp) makes one of each registered
// extension per run; the core names none of them.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/run_context.hpp"
#include "core/deck.hpp"
#include "train/step_hooks.hpp"

namespace zm {

class TrainingExtension {
 public:
  virtual ~TrainingExtension() = default;
  // Collective, in a run that writes outputs, once results.h5 is open: its own outputs. It may
  // give the run's phases a span observer (context.spans), which must outlive the run.
  virtual void open_outputs(const Deck& /*deck*/, Communicator& /*comm*/, RunContext& /*context*/) {
  }
  // Collective, before a stage builds its trainer: a check that may stop the run (a
  // CollectiveError thrown by every rank alike).
  virtual void before_stage(const Deck& /*deck*/, int /*stage*/, Communicator& /*comm*/) {}
  // Its step hooks for one stage, which run before the core's (train/step_hooks.hpp).
  virtual void add_stage_hooks(const StageOutputs& /*outputs*/, StepHooks& /*hooks*/) {}
  // Collective, after the last stage of a run that writes outputs and met no error: its outputs
  // finished, before results.h5's last write.
  virtual void close_outputs(const RunContext& /*context*/) {}
};

using TrainingExtensionFactory = std::function<std::unique_ptr<TrainingExtension>()>;
void add_training_extension(TrainingExtensionFactory factory);
// One of each registered extension, in registration order.
std::vector<std::unique_ptr<TrainingExtension>> make_training_extensions();

}  // namespace zm
