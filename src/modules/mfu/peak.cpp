#include "modules/mfu/peak.hpp"

#include <fmt/format.h>

#include <cmath>
#include <exception>

#include "core/error.hpp"
#include "core/log.hpp"

namespace zm {

namespace {

// A positive, finite number of TFLOP/s, all of `text`.
double parse_peak_tflops(const std::string& text) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(value) || value <= 0)
    fail(
        "--peak-tflops {}: expected a positive number of TFLOP/s per device (the device's dense "
        "peak in the deck's precision, e.g. 989.4 for an H100 SXM in bf16)",
        text);
  return value;
}

}  // namespace

const char* machine_peak_key(Precision precision) {
  switch (precision) {
    case Precision::TF32:
      return "compute.peak_tflops_tf32";
    case Precision::BF16:
      return "compute.peak_tflops_mixed";  // the 16-bit tensor-core peak
    case Precision::FP32:
      break;
  }
  return "compute.peak_tflops_fp32";
}

// Dense peak FLOP/s per device; 0 where the file gives none.
double machine_peak_flops(const Machine& machine, Precision precision) {
  return machine.number(machine_peak_key(precision), 1e12);
}

double predicted_mfu(const PlanPoint& p, double step_seconds) {
  const auto peak = p.figures.find(kPeakFigure);
  if (peak == p.figures.end() || peak->second <= 0 || step_seconds <= 0) return NAN;
  return p.model_flops_per_step / step_seconds / peak->second;
}

PeakRate resolve_peak(const std::string& peak_tflops, const std::string& machine_path,
                      const Deck& deck) {
  if (!peak_tflops.empty() && !machine_path.empty())
    fail("--peak-tflops and --machine both give a peak: give one of them");
  if (!peak_tflops.empty())
    return {parse_peak_tflops(peak_tflops) * 1e12, "--peak-tflops " + peak_tflops};
  if (machine_path.empty()) return {};
  const Machine machine = load_machine(machine_path);
  const Precision precision = deck.train.precision;
  const double peak = machine_peak_flops(machine, precision);
  if (peak <= 0) {
    log_root("note: {} gives no {} peak ({}): MFU is not available\n", machine_path,
             precision_name(precision), machine_peak_key(precision));
    return {};
  }
  return {peak,
          fmt::format("{}, {} in {}", machine.name, machine_peak_key(precision), machine_path)};
}

}  // namespace zm
