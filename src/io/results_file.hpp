// <output.dir>/results.h5: everything a run measures, readable with h5py.
//
//   attributes   deck (resolved TOML), version, world_size, stages, hostnames (per rank),
//                start_time (UTC), status (running | completed | stopped_non_finite | ...),
//                figure_of_merit and figure_of_merit_units (at the end)
//   /stage_<s>/  step, loss, grad_norm, lr (rows; step: the 1-based optimizer step of each row)
//                step_times (rows, ranks, columns) seconds: forward, backward, comm_wait,
//                optimizer, total, then the modules' columns (io/stage_figures.hpp)
//                memory_allocated, memory_peak (ranks, 7) bytes by category (device's, then host)
//                comm_calls, comm_bytes, comm_seconds (ranks, collective kinds)
//                comm_bytes_inter_group (ranks, collective kinds): the part of comm_bytes that
//                crossed shard groups (hybrid sharding)
//                the modules' series (io/stage_figures.hpp): (records) a step dataset and one per
//                value, rows recorded after some of the steps
//                segment_first_step, attribute segments  one entry per run that wrote rows
//                attributes: stage, steps_completed, tokens_per_second_per_rank,
//                shard_size (ranks per shard group); the throughput: tokens_per_second (all
//                ranks), step_seconds (rank 0's mean), model_ and hardware_flops_per_token
//                (model/flops.hpp) and _per_step (all ranks), tflops_per_device, tflops_total,
//                hardware_tflops_per_device
//                what the modules measured (io/stage_figures.hpp): attributes, and datasets of
//                (ranks, columns)
//   the modules' groups (add_results_group), e.g. what ran and where
// A run resumed into the same directory keeps the earlier runs' rows: rows after the step it
// resumed from are replaced by its own (the same steps, computed again).
// Rank 0 writes; the file is rewritten every `output.results_every` steps and at the end under a
// temporary name, fsync'ed and renamed, so a run killed at any point leaves the last complete
// flush. A write that fails is a collective decision (IoError on every rank).
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "core/deck.hpp"
#include "io/run_records.hpp"

namespace zm {

// A stage's rows and figures as the writer holds them (and reads back from an earlier run's file).
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
  // A completed stage's figures: memory (ranks x categories); the core's traffic, then what the
  // modules measured (io/stage_figures.hpp); the stage's attributes, throughput among them.
  std::vector<int64_t> memory_allocated, memory_peak;
  std::vector<RankDataset> datasets;
  std::vector<StageAttribute> attributes;
  bool complete = false;
  // One per run that wrote rows: its first step (1-based) and a line describing it.
  std::vector<int64_t> segment_first_step;
  std::vector<std::string> segments;
};

class Watchdog;

// A group of results.h5 beside the stages that a module adds: `gather` runs collectively on every
// rank when the results writer is made and returns what writes the group into the file (rank 0,
// at each flush).
using ResultsGroupWrite = std::function<void(hid_t file)>;
using ResultsGroupGather = std::function<ResultsGroupWrite(const Deck&, MPI_Comm, Watchdog&)>;
void add_results_group(ResultsGroupGather gather);

class ResultsWriter {
 public:
  // Collective over `comm`, whose file waits run under `watchdog`: gathers every rank's host name
  // and the modules' groups. `keep_history`: a resumed run, which keeps the rows already in `path`.
  ResultsWriter(const Deck& deck, MPI_Comm comm, Watchdog& watchdog, const std::string& path,
                bool keep_history);

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

 private:
  void write_run_attributes(hid_t file, const std::string& status) const;
  void write_stage(hid_t file, const ResultsStage& s) const;
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
  std::vector<std::string> hostnames_;     // per rank, on rank 0
  std::vector<ResultsGroupWrite> groups_;  // the modules' (add_results_group)
};

}  // namespace zm
