// <output.dir>/results.h5: everything a run measures, readable with h5py.
//
//   attributes   deck (resolved TOML), version, world_size, stages, hostnames (per rank),
//                start_time (UTC), status (running | completed | stopped_non_finite | ...),
//                figure_of_merit and figure_of_merit_units (at the end)
//   /stage_<s>/  step, loss, grad_norm, lr                (rows; step is the 1-based optimizer
//                                                         step each row measured)
//                step_times                              (rows, ranks, columns) seconds: forward,
//                                                        backward, comm_wait, optimizer, total,
//                                                        then the modules' columns
//                                                        (io/stage_figures.hpp)
//                memory_allocated, memory_peak           (ranks, 7) bytes, by category (the
//                                                        device's, then host)
//                comm_calls, comm_bytes, comm_seconds    (ranks, 5) by collective kind
//                comm_bytes_inter_group                  (ranks, 5) the part of comm_bytes that
//                                                        crossed shard groups (hybrid sharding)
//                the modules' series (io/stage_figures.hpp): (records) a step dataset and one per
//                value, rows recorded after some of the steps
//                segment_first_step, attribute segments  one entry per run that wrote rows
//                attributes: stage, steps_completed, tokens_per_second_per_rank,
//                shard_size (ranks per shard group), ...
//                throughput (write_stage_throughput below): FLOPs and TFLOP/s
//                what the modules measured (io/stage_figures.hpp): attributes, and datasets of
//                (ranks, columns)
//   /manifest/   attributes: what ran (io/manifest.hpp)
// A run resumed into the same directory keeps the earlier runs' rows (read_results_history): rows
// after the step it resumed from are replaced by its own (the same steps, computed again).
// Rank 0 writes; the file is rewritten every `output.results_every` steps and at the end under a
// temporary name, fsync'ed and renamed, so a run killed at any point leaves the last complete
// flush. A write that fails is a collective decision (IoError on every rank).
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "core/deck.hpp"
#include "io/manifest.hpp"
#include "io/run_records.hpp"

namespace zm {

// The rows of results.h5 that earlier runs wrote, kept when a run resumes into the same
// directory, and the per-stage data the results writer holds.

// A figure a stage does not have (HDF5 attributes hold it as NaN).
inline constexpr double kNoFigure = std::numeric_limits<double>::quiet_NaN();

struct ResultsStage {
  int stage = 0;
  std::vector<int64_t> step;  // 1-based optimizer step of each row
  std::vector<double> loss, grad_norm, lr;
  // rows x time_ranks x step_time_columns() (io/stage_figures.hpp); NaN where a rank did not run
  // or a file read back had no such column
  std::vector<double> step_times;
  int time_ranks = 0;
  // The modules' series (stage_series(), in its order): each record's step and values.
  struct SeriesRows {
    std::vector<int64_t> step;
    std::vector<std::vector<double>> values;  // [value][record]
  };
  std::vector<SeriesRows> series = std::vector<SeriesRows>(stage_series().size());
  std::vector<int64_t> memory_allocated, memory_peak;        // ranks x categories
  std::vector<double> comm_calls, comm_bytes, comm_seconds;  // ranks x ops
  std::vector<double> comm_bytes_inter_group;                // ranks x ops
  int64_t shard_size = 0;                                    // ranks per shard group
  double tokens_per_second_per_rank = 0;
  Throughput throughput;  // rank 0's (train/throughput.hpp)
  // What the modules measured of the stage (io/stage_figures.hpp).
  std::vector<RankDataset> figure_datasets;
  std::vector<StageAttribute> figure_attributes;
  bool complete = false;
  // One per run that wrote rows: its first step (1-based) and a line describing it.
  std::vector<int64_t> segment_first_step;
  std::vector<std::string> segments;

  // Appends a row; `times` holds step_time_columns() values for each of `ranks` ranks.
  void append_row(int64_t row_step, double row_loss, double row_grad_norm, double row_lr,
                  const std::vector<double>& times, int ranks);
  // Drops the rows after `last_step` (a resumed run computes them again); returns how many.
  size_t drop_rows_after(int64_t last_step);
};

// Rank 0 of a resumed run: the stages in an existing results.h5, with their rows ("" when the
// file does not exist). Throws zm::Error when it cannot be read.
std::vector<ResultsStage> read_results_history(const std::string& path);

class Watchdog;

class ResultsWriter {
 public:
  // Collective over `comm`, whose file waits run under `watchdog`. `manifest`: the run's
  // (io/manifest.hpp), written as /manifest, its host names as the run's. `keep_history`: a
  // resumed run, which keeps the rows already in `path`.
  ResultsWriter(const Deck& deck, const RunManifest& manifest, MPI_Comm comm, Watchdog& watchdog,
                const std::string& path, bool keep_history);

  // Collective: every rank calls these at the same points. `first_step`: the steps done before
  // this run's first (0, or the resumed checkpoint's), `resumed_from` that checkpoint or "".
  void begin_stage(int stage, int64_t first_step, const std::string& resumed_from);
  // `figures`: the stage's, whose step_times values go in the row.
  void record_step(const StepRecord& record,
                   const std::vector<std::shared_ptr<StageFigures>>& figures);
  // A row of the series named `series` (its step dataset, io/stage_figures.hpp) after step
  // `step` (1-based), its values in the series' order. Rank 0 keeps it, the others ignore it: a
  // module that wants a figure over the ranks reduces it first.
  void add_series_row(const std::string& series, int64_t step, const std::vector<double>& values);
  void end_stage(const StageResult& result);
  // Collective: rank 0 writes the file now; every rank learns the outcome. Throws IoError on
  // every rank when the write failed (the previous results.h5 is then untouched).
  void flush(const std::string& status);
  const std::string& path() const { return path_; }

 private:
  void write_run_attributes(hid_t file, const std::string& status) const;
  void write_stage(hid_t file, const ResultsStage& s) const;
  void write_stage_figures(hid_t group, const ResultsStage& s) const;
  void write_stage_series(hid_t group, const ResultsStage& s) const;
  std::string write_file(const std::string& status) const;  // rank 0; "" or what failed

  const Deck* deck_;
  MPI_Comm comm_;
  Watchdog& watchdog_;
  int rank_ = 0, ranks_ = 1;
  std::string path_;
  std::string start_time_;
  std::vector<ResultsStage> stages_;
  CommStats stage_comm_;        // this rank's collectives in the current stage
  CommStats stage_comm_inter_;  // the part of them across shard groups
  double figure_of_merit_ = -1;
  RunManifest manifest_;
};

// A stage's throughput in results.h5 (/stage_<s>):
//   attributes  tokens_per_second (all ranks), step_seconds (rank 0's mean over the timed steps),
//               model_flops_per_token, hardware_flops_per_token (model/flops.hpp),
//               model_flops_per_step, hardware_flops_per_step (all ranks),
//               tflops_per_device, tflops_total, hardware_tflops_per_device (model FLOPs, or
//               hardware FLOPs, / step_seconds); and the stage's figures' attributes
void write_stage_throughput(hid_t group, const ResultsStage& s);

}  // namespace zm
