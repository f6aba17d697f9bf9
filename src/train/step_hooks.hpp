// What happens around a step without being part of it: progress lines, results and
// checkpoints, and what the modules add (train/training_extensions.hpp). The run loop
// (train/run.cpp) calls every hook at the same points of every step, in the order they were
// added; the step itself (Trainer::step) knows none of them.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "comm/run_context.hpp"
#include "core/deck.hpp"
#include "io/results_file.hpp"
#include "io/run_records.hpp"
#include "train/trainer.hpp"
#include "zero/engine.hpp"

namespace zm {

// A step that ended on every rank, after the ranks agreed whether to stop.
struct StepDone {
  const StepRecord& record;
  bool last;      // the deck's last step
  bool stopping;  // a stop signal: the run ends after this step
};

class StepHook {
 public:
  virtual ~StepHook() = default;
  // Before step `step` (0-based) runs.
  virtual void before_step(int64_t /*step*/) {}
  // Right after the step, finite or not, on every rank.
  virtual void on_record(const StepRecord& /*record*/) {}
  // After a finite step, once the ranks agreed whether to stop.
  virtual void after_step(const StepDone& /*done*/) {}
  // The stage's steps are over (completed or stopped).
  virtual void at_end() {}
};

// The stage's hooks, each event passed to them in the order they were added.
class StepHooks final : public StepHook {
 public:
  void add(std::unique_ptr<StepHook> hook) { hooks_.push_back(std::move(hook)); }
  void before_step(int64_t step) override {
    for (auto& hook : hooks_) hook->before_step(step);
  }
  void on_record(const StepRecord& record) override {
    for (auto& hook : hooks_) hook->on_record(record);
  }
  void after_step(const StepDone& done) override {
    for (auto& hook : hooks_) hook->after_step(done);
  }
  void at_end() override {
    for (auto& hook : hooks_) hook->at_end();
  }

 private:
  std::vector<std::unique_ptr<StepHook>> hooks_;
};

// What the hooks of one stage need to know.
struct StageOutputs {
  const Deck& deck;
  const RunContext& context;
  int stage;
  int64_t first_step;
  double tokens_per_rank_per_step;
  ResultsWriter* results;    // results.h5, or nullptr
  ZeroEngine* checkpointed;  // the engine whose state checkpoints hold, or nullptr (none written)
  Trainer& trainer;          // the stage's (a hook may run forward-only passes between steps)
  // Receives the modules' figures of the stage (StageResult::figures), which go into results.h5's
  // rows.
  StageResult& result;
};

// The core's hooks of a stage, added in their order: progress lines, checkpoints, results.
void add_stage_hooks(const StageOutputs& outputs, StepHooks& hooks);

}  // namespace zm
