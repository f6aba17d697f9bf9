// The peak a run's MFU is measured against: --peak-tflops, or the machine file's dense peak for
// the deck's precision (its compute.peak_tflops_<precision> keys, plan/machine.hpp).
#pragma once

#include <string>

#include "core/deck.hpp"
#include "plan/machine.hpp"
#include "plan/planner.hpp"

namespace zm {

struct PeakRate {
  double flops_per_second = 0;  // per device; 0: none given, and MFU is not available
  std::string source;           // where the figure comes from, said with it
};

// The machine's peak for a run in `precision` (0: none given), and its key in the file.
double machine_peak_flops(const Machine& machine, Precision precision);
const char* machine_peak_key(Precision precision);

// The planner's predicted MFU: a point's model FLOPs per device over `step_seconds` (its
// overlapped or serial step time) over the peak its pricing recorded (PlanPoint::figures
// kPeakFigure); NaN without a peak.
inline const char* const kPeakFigure = "peak_flops";
double predicted_mfu(const PlanPoint& point, double step_seconds);

// --peak-tflops's value (text; "" where not given), or the machine file's (path; "" for none):
// fails on a bad value or on both; says so (rank 0) where the machine file gives no peak.
PeakRate resolve_peak(const std::string& peak_tflops, const std::string& machine, const Deck& deck);

}  // namespace zm
