#include "modules/estimate/first_step_notice.hpp"

#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "core/log.hpp"
#include "modules/estimate/run_estimate.hpp"

namespace zm {

struct FirstStepNotice::State {
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  std::thread thread;
};

FirstStepNotice::FirstStepNotice(int stage, int64_t step, double estimated_seconds)
    : state_(std::make_unique<State>()) {
  double delay = 60;
  if (const char* test_delay = std::getenv("ZEROMINI_TEST_FIRST_STEP_NOTICE_S"))
    delay = std::atof(test_delay);
  State* state = state_.get();
  state->thread = std::thread([state, stage, step, estimated_seconds, delay] {
    std::unique_lock<std::mutex> lock(state->mutex);
    if (state->finished.wait_for(lock, std::chrono::duration<double>(delay),
                                 [state] { return state->done; }))
      return;
    log_root("[stage {}] step {} still running after {}{}\n", stage, step + 1, human_seconds(delay),
             estimated_seconds > 0
                 ? fmt::format(" (estimated {} per step)", human_seconds(estimated_seconds))
                 : std::string());
  });
}

FirstStepNotice::~FirstStepNotice() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->done = true;
  }
  state_->finished.notify_all();
  state_->thread.join();
}

namespace {

// From before the stage's first step until its record: the step's notice. A step that throws
// ends it with the stage's hooks.
class NoticeOfFirstStep final : public StepHook {
 public:
  NoticeOfFirstStep(int stage, int64_t first_step, double estimated_seconds)
      : stage_(stage), first_step_(first_step), estimated_seconds_(estimated_seconds) {}
  void before_step(int64_t step) override {
    if (step == first_step_) notice_.emplace(stage_, step, estimated_seconds_);
  }
  void on_record(const StepRecord& record) override {
    (void)record;
    notice_.reset();
  }

 private:
  int stage_;
  int64_t first_step_;
  double estimated_seconds_;
  std::optional<FirstStepNotice> notice_;
};

class FirstStepNotices final : public TrainingExtension {
 public:
  void add_stage_hooks(const StageOutputs& outputs, StepHooks& hooks) override {
    hooks.add(std::make_unique<NoticeOfFirstStep>(
        outputs.stage, outputs.first_step, outputs.context.figure(kEstimatedStepFigure, 0.0)));
  }
};

}  // namespace

std::unique_ptr<TrainingExtension> make_first_step_notices() {
  return std::make_unique<FirstStepNotices>();
}

}  // namespace zm
