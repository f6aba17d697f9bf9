#include "io/results_file.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <limits>

#include "comm/agree.hpp"
#include "comm/watchdog.hpp"
#include "comm/watched_mpi.hpp"
#include "core/abort_record.hpp"
#include "core/build_info.hpp"
#include "core/error.hpp"
#include "core/fault_points.hpp"
#include "core/log.hpp"
#include "core/registry.hpp"
#include "core/regular_file.hpp"
#include "core/stage_spec.hpp"
#include "io/durable_file.hpp"
#include "io/h5.hpp"
#include "io/run_status.hpp"

namespace zm {

namespace {

// step_times' columns: the core's, then the modules' (io/stage_figures.hpp).
size_t phases() {
  return step_time_columns().size();
}

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

template <typename Enum>
std::vector<std::string> names(int count, const char* (*name_of)(Enum)) {
  std::vector<std::string> out;
  for (int i = 0; i < count; ++i) out.push_back(name_of(static_cast<Enum>(i)));
  return out;
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Every rank's host name on rank 0 (at most 255 characters each); empty elsewhere.
std::vector<std::string> gather_host_names(MPI_Comm comm, Watchdog& watchdog, int rank, int ranks) {
  constexpr int kNameBytes = 256;
  char host[kNameBytes] = {};
  gethostname(host, kNameBytes - 1);
  std::vector<char> all(static_cast<size_t>(kNameBytes) * static_cast<size_t>(ranks));
  watched_gather(watchdog, host, kNameBytes, MPI_CHAR, all.data(), 0, comm,
                 "the gather of host names");
  std::vector<std::string> names;
  for (int r = 0; rank == 0 && r < ranks; ++r) names.emplace_back(all.data() + kNameBytes * r);
  return names;
}

// The core's traffic datasets of a stage, (ranks, collective kinds) each.
constexpr int kCommFigures = 4;
const std::pair<const char*, const char*> kCommDatasets[kCommFigures] = {
    {"comm_calls", "calls"},
    {"comm_bytes", "bytes sent per rank (ring convention)"},
    {"comm_bytes_inter_group",
     "bytes sent per rank across shard groups (ring convention; the rest of comm_bytes stayed in "
     "the shard group)"},
    {"comm_seconds", "seconds waiting"}};

// step_times re-laid with `ranks` columns of ranks (the extra ones NaN): a resumed run may have
// more ranks than the runs before it.
void widen(ResultsStage& s, int ranks) {
  if (ranks <= s.time_ranks) return;
  const size_t rows = s.step.size(), old_width = static_cast<size_t>(s.time_ranks) * phases(),
               width = static_cast<size_t>(ranks) * phases();
  std::vector<double> wider(rows * width, kNaN);
  for (size_t r = 0; r < rows; ++r)
    std::copy_n(s.step_times.begin() + static_cast<std::ptrdiff_t>(r * old_width), old_width,
                wider.begin() + static_cast<std::ptrdiff_t>(r * width));
  s.step_times.swap(wider);
  s.time_ranks = ranks;
}

// Rows of a file written with other step_times columns (an older zeromini's, or a build with
// other modules) re-laid with this build's: each column by its name, NaN where the file has none;
// the file's columns this build does not know are dropped.
std::vector<double> with_columns(const std::vector<double>& times,
                                 const std::vector<std::string>& file_columns) {
  const std::vector<std::string>& ours = step_time_columns();
  if (file_columns == ours) return times;
  const size_t old_width = file_columns.size(), cells = times.size() / old_width;
  std::vector<double> out(cells * ours.size(), kNaN);
  for (size_t k = 0; k < ours.size(); ++k) {
    const auto found = std::find(file_columns.begin(), file_columns.end(), ours[k]);
    if (found == file_columns.end()) continue;
    const size_t from = static_cast<size_t>(found - file_columns.begin());
    for (size_t c = 0; c < cells; ++c) out[c * ours.size() + k] = times[c * old_width + from];
  }
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
  if (dims.size() == 3) {
    s.time_ranks = static_cast<int>(dims[1]);
    h5::Handle set(H5Dopen2(group, "step_times", H5P_DEFAULT));
    const std::vector<std::string> columns = h5::read_attr_strings(set, "columns");
    if (columns.size() != dims[2])
      fail("stage_{}: step_times has {} columns and names {}", stage, dims[2], columns.size());
    s.step_times = with_columns(s.step_times, columns);
  }
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
  // The series this build's modules record; those of other builds are dropped.
  for (size_t k = 0; k < stage_series().size(); ++k) {
    const StageSeries& series = stage_series()[k];
    if (!h5::exists(group, series.step)) continue;
    ResultsStage::SeriesRows& rows = s.series[k];
    rows.step = as_int64(h5::read_doubles(group, series.step, dims));
    rows.values.clear();
    for (const std::string& name : series.values) {
      rows.values.push_back(h5::read_doubles(group, name, dims));
      if (rows.values.back().size() != rows.step.size())
        fail("stage_{}: {} has {} rows and {} has {}", stage, name, rows.values.back().size(),
             series.step, rows.step.size());
    }
  }
  if (s.step.size() != s.loss.size() ||
      s.step_times.size() != s.step.size() * static_cast<size_t>(s.time_ranks) * phases())
    fail("stage_{}: its datasets disagree on the number of rows", stage);
  return s;
}

// Drops the rows after `last_step` (a resumed run computes them again); returns how many.
size_t drop_rows_after(ResultsStage& s, int64_t last_step) {
  size_t keep = 0;
  while (keep < s.step.size() && s.step[keep] <= last_step) ++keep;
  const size_t dropped = s.step.size() - keep;
  for (auto* rows : {&s.loss, &s.grad_norm, &s.lr}) rows->resize(keep);
  s.step.resize(keep);
  s.step_times.resize(keep * static_cast<size_t>(s.time_ranks) * phases());
  for (ResultsStage::SeriesRows& rows : s.series) {
    size_t records = 0;
    while (records < rows.step.size() && rows.step[records] <= last_step) ++records;
    rows.step.resize(records);
    for (std::vector<double>& values : rows.values) values.resize(records);
  }
  while (!s.segment_first_step.empty() && s.segment_first_step.back() > last_step) {
    s.segment_first_step.pop_back();
    s.segments.pop_back();
  }
  return dropped;
}

// Rank 0 of a resumed run: the stages in an existing results.h5, with their rows (none when the
// file does not exist).
std::vector<ResultsStage> read_results_history(const std::string& path) {
  std::vector<ResultsStage> stages;
  if (!std::filesystem::exists(path)) return stages;
  require_regular_file(path, "results file of the run being resumed (train.resume)");
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

}  // namespace

ZM_REGISTRY(ResultsGroupGather, add_results_group, results_group_gathers)

ResultsWriter::ResultsWriter(const Deck& deck, MPI_Comm comm, Watchdog& watchdog,
                             const std::string& path, bool keep_history)
    : deck_(&deck), comm_(comm), watchdog_(watchdog), path_(path), start_time_(utc_now()) {
  MPI_Comm_rank(comm, &rank_);
  MPI_Comm_size(comm, &ranks_);
  hostnames_ = gather_host_names(comm, watchdog, rank_, ranks_);
  for (const ResultsGroupGather& gather : results_group_gathers())
    groups_.push_back(gather(deck, comm, watchdog));
  std::string error;
  if (rank_ == 0 && keep_history) {
    try {
      BlockingRegion region(watchdog_, "reading " + path, kLocalRegion, WaitKind::Io);
      stages_ = read_results_history(path);
    } catch (const Error& e) {
      error = e.what();
    }
  }
  // An earlier run's abort record says nothing about this one: gone before any rank records.
  if (rank_ == 0) std::remove(abort_record_path(path).c_str());
  agree_or_fail(watchdog_, comm, error, "reading the earlier results");
  set_abort_record(abort_record_path(path), rank_);
}

void ResultsWriter::begin_stage(int stage, int64_t first_step, const std::string& resumed_from) {
  stage_comm_ = CommStats{};
  stage_comm_inter_ = CommStats{};
  if (rank_ != 0) return;
  auto earlier = std::find_if(stages_.begin(), stages_.end(),
                              [&](const ResultsStage& s) { return s.stage == stage; });
  if (earlier == stages_.end()) {
    stages_.push_back(ResultsStage{});
    stages_.back().stage = stage;
  } else {
    // This run's rows go last; the rows it computes again are dropped from the earlier ones.
    ResultsStage kept = *earlier;
    stages_.erase(earlier);
    stages_.push_back(kept);
    const size_t dropped = drop_rows_after(stages_.back(), first_step);
    if (dropped > 0)
      log_root(
          "[stage {}] results: {} rows after step {} from an earlier run are replaced by "
          "this run's\n",
          stage, dropped, first_step);
  }
  ResultsStage& s = stages_.back();
  s.complete = false;
  s.segment_first_step.push_back(first_step + 1);
  s.segments.push_back(fmt::format(
      "from step {}: started {} on {} ranks{}", first_step + 1, start_time_, ranks_,
      resumed_from.empty() ? std::string(", fresh parameters") : ", resumed from " + resumed_from));
}

void ResultsWriter::record_step(const StepRecord& record,
                                const std::vector<std::shared_ptr<StageFigures>>& figures) {
  const std::vector<std::string>& columns = step_time_columns();
  std::vector<double> mine(columns.size(), kNaN);
  const double core[kCoreStepTimeColumns] = {record.times.forward, record.times.backward,
                                             record.times.comm_wait, record.times.optimizer,
                                             record.times.total};
  std::copy(core, core + kCoreStepTimeColumns, mine.begin());
  for (const auto& f : figures)
    for (const StepValue& v : f->step_values(record.step)) {
      const auto at = std::find(columns.begin(), columns.end(), v.column);
      ZM_ASSERT(at != columns.end(), "step_times has no column {}", v.column);
      mine[static_cast<size_t>(at - columns.begin())] = v.value;
    }
  const int phase_count = static_cast<int>(columns.size());
  std::vector<double> all(static_cast<size_t>(phase_count * ranks_));
  fault_point("results.gather", rank_, record.step + 1);
  watched_gather(watchdog_, mine.data(), phase_count, MPI_DOUBLE, all.data(), 0, comm_,
                 fmt::format("the results gather of step {}", record.step + 1));
  stage_comm_ += record.comm;
  stage_comm_inter_ += record.comm_inter_group;
  if (rank_ != 0) return;
  ResultsStage& s = stages_.back();
  widen(s, ranks_);
  s.step.push_back(record.step + 1);
  s.loss.push_back(record.loss);
  s.grad_norm.push_back(record.grad_norm);
  s.lr.push_back(record.lr);
  all.resize(static_cast<size_t>(s.time_ranks) * phases(), kNaN);
  s.step_times.insert(s.step_times.end(), all.begin(), all.end());
}

void ResultsWriter::add_series_row(const std::string& series, int64_t step,
                                   const std::vector<double>& values) {
  if (rank_ != 0) return;
  const std::vector<StageSeries>& all = stage_series();
  const auto found =
      std::find_if(all.begin(), all.end(), [&](const StageSeries& s) { return s.step == series; });
  ZM_ASSERT(found != all.end(), "results.h5 has no series {}", series);
  ZM_ASSERT(values.size() == found->values.size(), "series {}: a row of {} values, {} expected",
            series, values.size(), found->values.size());
  ResultsStage::SeriesRows& rows = stages_.back().series[static_cast<size_t>(found - all.begin())];
  rows.values.resize(values.size());
  rows.step.push_back(step);
  for (size_t v = 0; v < values.size(); ++v) rows.values[v].push_back(values[v]);
}

void ResultsWriter::end_stage(const StageResult& result) {
  std::vector<double> mine(kCommFigures * kCommOps);  // in kCommDatasets' order
  for (int op = 0; op < kCommOps; ++op) {
    const CommOpStats &all = stage_comm_.ops[op], &inter = stage_comm_inter_.ops[op];
    const double figures[kCommFigures] = {static_cast<double>(all.calls), all.bytes, inter.bytes,
                                          all.seconds};
    for (int k = 0; k < kCommFigures; ++k)
      mine[static_cast<size_t>(k * kCommOps + op)] = figures[k];
  }
  std::vector<double> all(mine.size() * static_cast<size_t>(ranks_));
  watched_gather(watchdog_, mine.data(), kCommFigures * kCommOps, MPI_DOUBLE, all.data(), 0, comm_,
                 "the gather of communication figures");
  if (rank_ != 0) return;
  ResultsStage& s = stages_.back();
  s.memory_allocated.clear();
  s.memory_peak.clear();
  s.datasets.clear();
  for (const auto& [name, units] : kCommDatasets)
    s.datasets.push_back({name, names(kCommOps, comm_op_name), units, {}});
  for (int r = 0; r < ranks_; ++r) {
    for (size_t k = 0; k < kCommFigures; ++k) {
      const double* v = all.data() + (static_cast<size_t>(r) * kCommFigures + k) * kCommOps;
      s.datasets[k].values.insert(s.datasets[k].values.end(), v, v + kCommOps);
    }
    const MemoryFigures& f = result.memory_by_rank[static_cast<size_t>(r)];
    for (int c = 0; c < kMemCategories; ++c) {
      s.memory_allocated.push_back(static_cast<int64_t>(f.current[static_cast<size_t>(c)]));
      s.memory_peak.push_back(static_cast<int64_t>(f.peak[static_cast<size_t>(c)]));
    }
  }
  const Throughput& t = result.throughput;
  s.attributes = {{"tokens_per_second_per_rank", result.tokens_per_second_per_rank},
                  {"shard_size", int64_t{result.shard_size}},
                  {"tokens_per_second", t.tokens_per_second},
                  {"step_seconds", t.step_seconds},
                  {"model_flops_per_token", t.model_flops_per_token},
                  {"hardware_flops_per_token", t.hardware_flops_per_token},
                  {"model_flops_per_step", t.model_flops_per_step},
                  {"hardware_flops_per_step", t.hardware_flops_per_step},
                  {"tflops_per_device", t.tflops_per_device},
                  {"tflops_total", t.tflops_total},
                  {"hardware_tflops_per_device", t.hardware_tflops_per_device}};
  for (const auto& f : result.figures) {
    for (RankDataset& d : f->datasets()) s.datasets.push_back(std::move(d));
    for (const StageAttribute& a : f->attributes()) s.attributes.push_back(a);
  }
  s.complete = true;
  figure_of_merit_ = result.tokens_per_second_per_rank;
}

void ResultsWriter::write_run_attributes(hid_t file, const std::string& status) const {
  h5::write_attr(file, "deck", deck_->resolved_toml());
  h5::write_attr(file, "deck_path", deck_->path);
  h5::write_attr(file, "version", version_report());
  h5::write_attr(file, "git_revision", git_revision());
  h5::write_attr(file, "world_size", static_cast<int64_t>(ranks_));
  h5::write_attr(file, "hostnames", hostnames_);
  h5::write_attr(file, "start_time", start_time_);
  h5::write_attr(file, "written_time", utc_now());
  h5::write_attr(file, "status", status);
  std::vector<std::string> stage_list;
  for (const ResultsStage& s : stages_) stage_list.push_back(std::to_string(s.stage));
  h5::write_attr(file, "stages", stage_list);
  if (figure_of_merit_ >= 0) {
    h5::write_attr(file, "figure_of_merit", figure_of_merit_);
    h5::write_attr(file, "figure_of_merit_units", std::string("tokens/s per rank"));
  }
}

void ResultsWriter::write_stage(hid_t file, const ResultsStage& s) const {
  h5::Handle group = h5::create_group(file, fmt::format("stage_{}", s.stage));
  const hsize_t steps = s.loss.size(), time_ranks = static_cast<hsize_t>(s.time_ranks);
  h5::write_attr(group, "stage", static_cast<int64_t>(s.stage));
  h5::write_attr(group, "steps_completed", s.step.empty() ? int64_t(0) : s.step.back());
  h5::write_attr(group, "complete", static_cast<int64_t>(s.complete));
  h5::write_dataset(group, "step", s.step, {steps});
  h5::write_dataset(group, "segment_first_step", s.segment_first_step,
                    {s.segment_first_step.size()});
  h5::write_attr(group, "segments", s.segments);
  h5::write_dataset(group, "loss", s.loss, {steps});
  h5::write_dataset(group, "grad_norm", s.grad_norm, {steps});
  h5::write_dataset(group, "lr", s.lr, {steps});
  h5::write_dataset(group, "step_times", s.step_times, {steps, time_ranks, phases()},
                    {"seconds", step_time_columns(), {"step", "rank", "phase"}});
  // The modules' series so far: those with rows.
  for (size_t k = 0; k < stage_series().size(); ++k) {
    const StageSeries& series = stage_series()[k];
    const ResultsStage::SeriesRows& rows = s.series[k];
    const hsize_t records = rows.step.size();
    if (records == 0) continue;
    h5::write_dataset(group, series.step, rows.step, {records});
    for (size_t v = 0; v < series.values.size(); ++v)
      h5::write_dataset(group, series.values[v], rows.values[v], {records},
                        {series.units[v], {}, {}});
  }
  if (!s.complete) return;
  // A completed stage's figures: memory, traffic and what the modules measured per rank, and its
  // attributes.
  const hsize_t ranks = static_cast<hsize_t>(ranks_);
  const std::vector<std::string> categories = names(kMemCategories, mem_category_name);
  h5::write_dataset(group, "memory_allocated", s.memory_allocated, {ranks, kMemCategories},
                    {"bytes", categories, {"rank", "column"}});
  h5::write_dataset(group, "memory_peak", s.memory_peak, {ranks, kMemCategories},
                    {"bytes", categories, {"rank", "column"}});
  for (const RankDataset& d : s.datasets) {
    ZM_ASSERT(d.values.size() == ranks * d.columns.size(), "{}: {} values for {} ranks x {}",
              d.name, d.values.size(), ranks, d.columns.size());
    h5::write_dataset(group, d.name, d.values, {ranks, static_cast<hsize_t>(d.columns.size())},
                      {d.units, d.columns, {"rank", "column"}});
  }
  for (const StageAttribute& a : s.attributes)
    std::visit([&](auto value) { h5::write_attr(group, a.name, value); }, a.value);
}

// Rank 0: the whole file under a temporary name, fsync'ed (a full disk or quota that the file
// system reports late surfaces here), renamed over the last one, and the directory fsync'ed.
std::string ResultsWriter::write_file(const std::string& status) const {
  const std::string temporary = path_ + ".tmp";
  BlockingRegion region(watchdog_, "writing " + temporary, kLocalRegion, WaitKind::Io);
  std::string error;
  try {
    h5::Handle file = h5::create_file(temporary);
    write_run_attributes(file, status);
    for (const ResultsGroupWrite& write : groups_) write(file);
    for (const ResultsStage& s : stages_) write_stage(file, s);
    if (H5Fflush(file, H5F_SCOPE_GLOBAL) < 0)
      fail("{}: flush failed: {}", temporary, h5::last_error());
    if (!file.close()) fail("{}: closing failed: {}", temporary, h5::last_error());
    const int64_t steps =
        stages_.empty() || stages_.back().step.empty() ? 0 : stages_.back().step.back();
    fault_point("results.write", rank_, steps, temporary);
    error = sync_file(temporary);
    if (error.empty() && std::rename(temporary.c_str(), path_.c_str()) != 0)
      error = fmt::format("renaming {} failed: {}", temporary, errno_text(errno));
    if (error.empty()) error = sync_directory(std::filesystem::path(path_).parent_path().string());
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (!error.empty()) ::unlink(temporary.c_str());
  return error;
}

void ResultsWriter::flush(const std::string& status) {
  const std::string error = rank_ == 0 ? write_file(status) : "";
  const Agreement outcome = agree(watchdog_, comm_, error, "the results write");
  if (!outcome.ok())
    throw IoError(fmt::format("{} was not written: {}. The previous version is untouched.", path_,
                              outcome.message));
  // The file says how the run ended: an abort after this (in MPI_Finalize) is not recorded.
  if (status != "running") set_abort_record("", rank_);
}

}  // namespace zm
