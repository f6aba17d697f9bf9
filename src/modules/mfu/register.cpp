// The module's registration (core/modules.hpp): `zeromini run --peak-tflops`, each stage's MFU and
// HFU against the peak (results.h5, summary.json, the closing table's throughput line), and the
// planner's predicted MFU (its table, CSV and note on the machine).
#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/text.hpp"
#include "io/stage_figures.hpp"
#include "modules/mfu/peak.hpp"
#include "plan/plan_extensions.hpp"
#include "train/command_extensions.hpp"
#include "train/stage_hooks_extension.hpp"

namespace zm {

namespace {

// The run's peak, resolved before training (one run per process).
PeakRate& run_peak() {
  static PeakRate peak;
  return peak;
}

class PeakOption final : public RunCommandExtension {
 public:
  std::vector<CommandOption> options() override {
    return {{"--peak-tflops",
             "Peak TFLOP/s per device in the deck's precision: MFU is reported against it "
             "(without a peak, MFU is not available; --machine FILE: its "
             "compute.peak_tflops_<precision>)",
             &peak_tflops_, "TFLOPS"}};
  }
  void before_training(const Deck& deck, const RunInvocation& run) override {
    run_peak() = resolve_peak(peak_tflops_, run.machine, deck);
  }

 private:
  std::string peak_tflops_;
};

std::string json_number(double value) {
  return std::isfinite(value) ? fmt::format("{}", value) : "null";
}

// A stage's MFU and HFU: model and hardware TFLOP/s per device over the peak, where one was given.
class MfuFigures final : public StageFigures {
 public:
  explicit MfuFigures(PeakRate peak) : peak_(std::move(peak)) {}
  void throughput_measured(const Throughput& t) override {
    if (peak_.flops_per_second <= 0 || t.tflops_per_device <= 0) return;
    peak_tflops_ = peak_.flops_per_second / 1e12;
    mfu_ = t.tflops_per_device / peak_tflops_;
    hfu_ = t.hardware_tflops_per_device / peak_tflops_;
  }
  std::vector<StageAttribute> attributes() const override {
    if (!std::isfinite(mfu_)) return {};  // MFU exists only against a stated peak
    return {{"peak_tflops_per_device", peak_tflops_},
            {"peak_source", peak_.source},
            {"mfu", mfu_},
            {"hfu", hfu_}};
  }
  std::vector<std::string> summary_members(SummaryObject object) const override {
    if (object != SummaryObject::Throughput) return {};
    const bool peak = std::isfinite(mfu_);
    return {
        fmt::format("\"peak_tflops_per_device\": {}", peak ? json_number(peak_tflops_) : "null"),
        fmt::format("\"peak_source\": {}", peak ? quoted(peak_.source) : "null"),
        fmt::format("\"mfu\": {}", json_number(mfu_)),
        fmt::format("\"hfu\": {}", json_number(hfu_))};
  }
  std::string throughput_line_end() const override {
    if (!std::isfinite(mfu_)) return ", MFU n/a (no peak: give --peak-tflops or --machine FILE)";
    return fmt::format(", MFU {:.3g}% of {:.4g} TFLOP/s ({})", 100.0 * mfu_, peak_tflops_,
                       peak_.source);
  }

 private:
  PeakRate peak_;
  double peak_tflops_ = 0;
  double mfu_ = NAN, hfu_ = NAN;
};

class MfuHook final : public StepHook {
 public:
  explicit MfuHook(const StageOutputs& outputs) {
    // First among the stage's figures: MFU comes right after the core's throughput figures.
    outputs.result.figures.insert(outputs.result.figures.begin(),
                                  std::make_shared<MfuFigures>(run_peak()));
  }
};

// The planner: the machine's peak for the deck's precision (0: none).
void price_peak(const Deck& deck, int, const ZeroMesh&, const Machine* machine, double,
                PlanPoint& point) {
  if (machine) point.figures[kPeakFigure] = machine_peak_flops(*machine, deck.train.precision);
}

std::string percent(double fraction) {
  return std::isfinite(fraction) ? fmt::format("{:.1f}", 100.0 * fraction) : std::string("n/a");
}
std::string csv_number(double value) {
  return std::isfinite(value) ? fmt::format("{:.6g}", value) : std::string();
}

}  // namespace

void register_module_mfu() {
  add_run_command_extension(std::make_unique<PeakOption>());
  add_training_extension([] {
    return stage_hooks_extension(
        [](const StageOutputs& outputs) { return std::make_unique<MfuHook>(outputs); });
  });
  add_plan_pricing(price_peak);
  PlanColumns columns;
  columns.at = PlanColumnsAt::AfterThroughput;
  columns.shown = [](const Deck&, const std::vector<PlanPoint>&) { return true; };
  columns.header = ",mfu_overlapped,mfu_serial";
  columns.row = [](const Deck&, const PlanPoint& p, bool) {
    return fmt::format(",{},{}", csv_number(predicted_mfu(p, p.step_seconds_overlapped)),
                       csv_number(predicted_mfu(p, p.step_seconds_serial)));
  };
  add_plan_columns(columns);
  PlanTableColumns table;
  table.at = PlanTableColumnsAt::AfterThroughput;
  table.shown = [](const std::vector<PlanPoint>&) { return true; };
  table.heading = [](bool) { return fmt::format(" {:>7} {:>7}", "MFU%ovl", "MFU%ser"); };
  table.cells = [](const PlanPoint& p, bool) {
    return fmt::format(" {:>7} {:>7}", percent(predicted_mfu(p, p.step_seconds_overlapped)),
                       percent(predicted_mfu(p, p.step_seconds_serial)));
  };
  add_plan_table_columns(table);
  add_plan_throughput_note([](const Deck& deck, const Machine& machine) {
    const Precision precision = deck.train.precision;
    const double peak = machine_peak_flops(machine, precision);
    if (peak > 0)
      return fmt::format(
          "; MFU = that / the {} peak {:.4g} TFLOP/s per device ({} in the machine file), at the "
          "overlapped and at the serial step time",
          precision_name(precision), peak / 1e12, machine_peak_key(precision));
    return fmt::format("; MFU n/a: the machine file gives no {} peak ({})",
                       precision_name(precision), machine_peak_key(precision));
  });
}

}  // namespace zm
