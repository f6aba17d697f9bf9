#include "modules/pipeline_parallel/bubble_figures.hpp"

#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "io/stage_figures.hpp"
#include "modules/pipeline_parallel/one_f_one_b.hpp"
#include "train/training_extensions.hpp"

namespace zm::pipeline {

namespace {

class BubbleFigures final : public StageFigures {
 public:
  explicit BubbleFigures(double schedule) : schedule_(schedule) {}
  void add(double idle, double busy) {
    idle_.push_back(idle);
    busy_.push_back(busy);
  }
  // This rank's idle fraction over the timed steps (all but the first, which warms up, where
  // there are more).
  double measured() const {
    double idle = 0, busy = 0;
    for (size_t s = idle_.size() > 1 ? 1 : 0; s < idle_.size(); ++s) {
      idle += idle_[s];
      busy += busy_[s];
    }
    return idle + busy > 0 ? idle / (idle + busy) : 0.0;
  }

  std::vector<StageAttribute> attributes() const override {
    return {{"pipeline_bubble", measured()}, {"pipeline_bubble_1f1b", schedule_}};
  }
  std::vector<std::string> summary_members(SummaryObject object) const override {
    if (object != SummaryObject::Stage) return {};
    return {
        fmt::format("      \"pipeline_bubble\": {{\"measured_rank0\": {:.6f}, \"1f1b\": {:.6f}}}",
                    measured(), schedule_)};
  }
  std::vector<TableColumn> table_columns() const override {
    return {{"opt", "bubble", 7, fmt::format("{:.3f}", measured())}};
  }
  std::string table_note() const override {
    return fmt::format(
        "bubble: rank 0's (the first stage's) time waiting for its neighbours / (that + its "
        "forward and backward), over the timed steps; 1F1B's (P - 1) / (m + P - 1) = {:.3f}\n",
        schedule_);
  }

 private:
  double schedule_;
  std::vector<double> idle_, busy_;
};

class BubbleHook final : public StepHook {
 public:
  explicit BubbleHook(std::shared_ptr<BubbleFigures> figures) : figures_(std::move(figures)) {}
  void on_record(const StepRecord& record) override {
    figures_->add(record.comm.ops[static_cast<int>(CommOp::Broadcast)].seconds,
                  record.times.forward + record.times.backward);
  }

 private:
  std::shared_ptr<BubbleFigures> figures_;
};

class BubbleExtension final : public TrainingExtension {
 public:
  void add_stage_hooks(const StageOutputs& o, StepHooks& hooks) override {
    const int64_t pp = o.deck.value<int64_t>("parallel.pp");
    if (pp == 1) return;
    auto figures = std::make_shared<BubbleFigures>(
        bubble_fraction(static_cast<int>(pp), static_cast<int>(o.deck.train.grad_accum)));
    o.result.figures.push_back(figures);
    hooks.add(std::make_unique<BubbleHook>(figures));
  }
};

}  // namespace

void add_bubble_figures() {
  add_training_extension([] { return std::make_unique<BubbleExtension>(); });
}

}  // namespace zm::pipeline
