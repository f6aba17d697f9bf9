// While a stage's first step runs: one progress line from rank 0 if it has not finished after a
// minute, with the run's estimate of a step, so that a long first step is not silence.
#pragma once

#include <cstdint>
#include <memory>

#include "train/training_extensions.hpp"

namespace zm {

// The name of the estimated step seconds (the longest stage's) among the run's figures
// (RunContext::figures), which the run's estimate gives before the first step.
inline constexpr const char* kEstimatedStepFigure = "estimated_step_seconds";

// One notice: its line comes after the delay (ZEROMINI_TEST_FIRST_STEP_NOTICE_S: another delay,
// for the tests) unless the notice ends first (its destructor, when the step ends).
class FirstStepNotice {
 public:
  FirstStepNotice(int stage, int64_t step, double estimated_seconds);
  ~FirstStepNotice();
  FirstStepNotice(const FirstStepNotice&) = delete;
  FirstStepNotice& operator=(const FirstStepNotice&) = delete;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The notices of a run: a step hook per stage that holds one while the stage's first step runs.
std::unique_ptr<TrainingExtension> make_first_step_notices();

}  // namespace zm
