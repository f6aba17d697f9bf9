// <output.dir>/results.h5: everything a run measures, readable with h5py.
//
//   attributes   deck (resolved TOML), version, world_size, stages, hostnames (per rank),
//                start_time (UTC), status (running | completed | stopped_non_finite | ...),
//                figure_of_merit and figure_of_merit_units (at the end)
//   /stage_<s>/  loss, grad_norm, lr                     (steps)
//                step_times                              (steps, ranks, 5) seconds: forward,
//                                                        backward, comm_wait, optimizer, total
//                memory_allocated, memory_peak           (ranks, 6) bytes, by category
//                comm_calls, comm_bytes, comm_seconds    (ranks, 5) by collective kind
//                attributes: stage, steps_completed, tokens_per_second_per_rank, ...
// Rank 0 writes; the file is rewritten every `output.results_every` steps and at the end under a
// temporary name and renamed, so a run killed at any point leaves the last complete flush.
#pragma once

#include <hdf5.h>

#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "core/deck.hpp"
#include "io/run_records.hpp"

namespace zm {

class ResultsWriter {
 public:
  ResultsWriter(const Deck& deck, MPI_Comm comm, const std::string& path);

  // Collective: every rank calls these at the same points.
  void begin_stage(int stage);
  void record_step(const StepRecord& record);
  void end_stage(const StageResult& result);
  // Rank 0: writes the file now (temporary name, then rename).
  void flush(const std::string& status);

  const std::string& path() const { return path_; }

 private:
  struct StageData {
    int stage = 0;
    std::vector<double> loss, grad_norm, lr;
    std::vector<double> step_times;                            // steps x ranks x 5
    std::vector<int64_t> memory_allocated, memory_peak;        // ranks x categories
    std::vector<double> comm_calls, comm_bytes, comm_seconds;  // ranks x ops
    double tokens_per_second_per_rank = 0;
    bool complete = false;
  };

  void write_run_attributes(hid_t file, const std::string& status) const;
  void write_stage(hid_t file, const StageData& s) const;

  const Deck* deck_;
  MPI_Comm comm_;
  int rank_ = 0, ranks_ = 1;
  std::string path_;
  std::string start_time_;
  std::vector<std::string> hostnames_;
  std::vector<StageData> stages_;
  CommStats stage_comm_;  // this rank's collectives in the current stage
  double figure_of_merit_ = -1;
};

}  // namespace zm
