#include "modules/zeropp/all_to_all_figures.hpp"

#include <fmt/format.h>

#include <vector>

#include "io/stage_figures.hpp"
#include "modules/zeropp/options.hpp"

namespace zm {

namespace {

// This rank's all-to-alls of a stage, the mean per step over all of its steps as the stage's
// traffic is (bytes averaged, calls summed and divided).
class AllToAllFigures final : public StageFigures {
 public:
  explicit AllToAllFigures(int stage) : stage_(stage) {}
  void add_step(const CommOpStats& step) { steps_.push_back(step); }
  void summarise() {
    for (const CommOpStats& step : steps_) {
      per_step_.calls += step.calls;
      per_step_.bytes += step.bytes / static_cast<double>(steps_.size());
    }
    if (!steps_.empty()) per_step_.calls /= steps_.size();
  }
  std::string table_note() const override {
    if (per_step_.calls == 0) return "";
    return fmt::format(
        "  stage {}: {:.3f} MiB per rank per step in {} quantized gradient "
        "all-to-alls\n",
        stage_, per_step_.bytes / (1024.0 * 1024.0), per_step_.calls);
  }

 private:
  int stage_;
  std::vector<CommOpStats> steps_;
  CommOpStats per_step_;
};

class AllToAllHook final : public StepHook {
 public:
  explicit AllToAllHook(const StageOutputs& outputs)
      : figures_(std::make_shared<AllToAllFigures>(outputs.stage)) {
    // First among the stage's figures: its line has come before the other modules' notes.
    outputs.result.figures.insert(outputs.result.figures.begin(), figures_);
  }
  void on_record(const StepRecord& record) override {
    figures_->add_step(record.comm[CommOp::AllToAll]);
  }
  void at_end() override { figures_->summarise(); }

 private:
  std::shared_ptr<AllToAllFigures> figures_;
};

class AllToAllExtension final : public TrainingExtension {
 public:
  void add_stage_hooks(const StageOutputs& outputs, StepHooks& hooks) override {
    if (zeropp_options(outputs.deck).quantize_grads)
      hooks.add(std::make_unique<AllToAllHook>(outputs));
  }
};

}  // namespace

std::unique_ptr<TrainingExtension> make_all_to_all_figures() {
  return std::make_unique<AllToAllExtension>();
}

}  // namespace zm
