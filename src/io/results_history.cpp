#include "io/results_history.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "core/error.hpp"
#include "core/regular_file.hpp"
#include "core/stage_spec.hpp"
#include "io/h5.hpp"

namespace zm {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// step_times re-laid with `ranks` columns of ranks (the extra ones NaN): a resumed run may have
// more ranks than the runs before it.
void widen(ResultsStage& s, int ranks) {
  if (ranks <= s.time_ranks) return;
  const size_t rows = s.step.size(), old_width = static_cast<size_t>(s.time_ranks) * kStepPhases,
               width = static_cast<size_t>(ranks) * kStepPhases;
  std::vector<double> wider(rows * width, kNaN);
  for (size_t r = 0; r < rows; ++r)
    std::copy_n(s.step_times.begin() + static_cast<std::ptrdiff_t>(r * old_width), old_width,
                wider.begin() + static_cast<std::ptrdiff_t>(r * width));
  s.step_times.swap(wider);
  s.time_ranks = ranks;
}

// Rows of an older file (five columns per rank) re-laid with the exposure columns, NaN.
std::vector<double> with_exposure_columns(const std::vector<double>& times) {
  const size_t old_width = kStepPhasesBeforeExposure, cells = times.size() / old_width;
  std::vector<double> out(cells * kStepPhases, kNaN);
  for (size_t c = 0; c < cells; ++c)
    std::copy_n(times.begin() + static_cast<std::ptrdiff_t>(c * old_width), old_width,
                out.begin() + static_cast<std::ptrdiff_t>(c * kStepPhases));
  return out;
}

std::vector<int64_t> as_int64(const std::vector<double>& values) {
  return std::vector<int64_t>(values.begin(), values.end());
}

ResultsStage read_stage(hid_t file, int stage) {
  h5::Handle group = h5::open_group(file, fmt::format("stage_{}", stage));
  ResultsStage s;
  s.stage = stage;
  std::vector<hsize_t> dims;
  s.loss = h5::read_doubles(group, "loss", dims);
  s.grad_norm = h5::read_doubles(group, "grad_norm", dims);
  s.lr = h5::read_doubles(group, "lr", dims);
  s.step_times = h5::read_doubles(group, "step_times", dims);
  s.time_ranks = dims.size() == 3 ? static_cast<int>(dims[1]) : 0;
  if (dims.size() == 3 && dims[2] == kStepPhasesBeforeExposure)
    s.step_times = with_exposure_columns(s.step_times);
  // Files from before rows carried their step number: rows 1..n.
  if (h5::exists(group, "step")) {
    s.step = as_int64(h5::read_doubles(group, "step", dims));
  } else {
    for (size_t i = 0; i < s.loss.size(); ++i) s.step.push_back(static_cast<int64_t>(i) + 1);
  }
  if (h5::exists(group, "segment_first_step")) {
    s.segment_first_step = as_int64(h5::read_doubles(group, "segment_first_step", dims));
    s.segments = h5::read_attr_strings(group, "segments");
  } else if (!s.step.empty()) {
    s.segment_first_step = {s.step.front()};
    s.segments = {"an earlier run (its file did not record segments)"};
  }
  if (s.step.size() != s.loss.size() ||
      s.step_times.size() != s.step.size() * static_cast<size_t>(s.time_ranks) * kStepPhases)
    fail("stage_{}: its datasets disagree on the number of rows", stage);
  return s;
}

}  // namespace

void ResultsStage::append_row(int64_t row_step, double row_loss, double row_grad_norm,
                              double row_lr, const std::vector<double>& times, int ranks) {
  widen(*this, ranks);
  step.push_back(row_step);
  loss.push_back(row_loss);
  grad_norm.push_back(row_grad_norm);
  lr.push_back(row_lr);
  const size_t width = static_cast<size_t>(time_ranks) * kStepPhases;
  std::vector<double> row(width, kNaN);
  std::copy(times.begin(), times.end(), row.begin());
  step_times.insert(step_times.end(), row.begin(), row.end());
}

size_t ResultsStage::drop_rows_after(int64_t last_step) {
  size_t keep = 0;
  while (keep < step.size() && step[keep] <= last_step) ++keep;
  const size_t dropped = step.size() - keep;
  step.resize(keep);
  loss.resize(keep);
  grad_norm.resize(keep);
  lr.resize(keep);
  step_times.resize(keep * static_cast<size_t>(time_ranks) * kStepPhases);
  while (!segment_first_step.empty() && segment_first_step.back() > last_step) {
    segment_first_step.pop_back();
    segments.pop_back();
  }
  return dropped;
}

std::vector<ResultsStage> read_results_history(const std::string& path) {
  std::vector<ResultsStage> stages;
  if (!std::filesystem::exists(path)) return stages;
  require_regular_file(path, "results file of the run being resumed");
  try {
    h5::Handle file = h5::open_file(path);
    for (const StageSpec& spec : kStageSpecs)
      if (h5::exists(file, fmt::format("stage_{}", spec.stage)))
        stages.push_back(read_stage(file, spec.stage));
  } catch (const Error& e) {
    fail(
        "{}: cannot read the earlier runs' results to keep them: {} (move the file aside to "
        "start a new one)",
        path, e.what());
  }
  return stages;
}

}  // namespace zm
