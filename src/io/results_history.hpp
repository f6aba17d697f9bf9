// The rows of results.h5 that earlier runs wrote, kept when a run resumes into the same
// directory, and the per-stage data the results writer holds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/run_records.hpp"

namespace zm {

// forward, backward, comm_wait, optimizer, total, comm_exposed, comm_in_flight (seconds)
constexpr int kStepPhases = 7;
// Files written before exposure was measured have the first five only.
constexpr int kStepPhasesBeforeExposure = 5;

struct ResultsStage {
  int stage = 0;
  std::vector<int64_t> step;  // 1-based optimizer step of each row
  std::vector<double> loss, grad_norm, lr;
  std::vector<double> step_times;  // rows x time_ranks x kStepPhases; NaN where a rank did not run
  int time_ranks = 0;
  std::vector<int64_t> memory_allocated, memory_peak;        // ranks x categories
  std::vector<double> comm_calls, comm_bytes, comm_seconds;  // ranks x ops
  std::vector<double> comm_bytes_inter_group;                // ranks x ops
  std::vector<double> comm_bytes_tensor_parallel;            // ranks x ops
  std::vector<double> comm_seconds_tensor_parallel;          // ranks x ops
  std::vector<double> comm_bytes_cross_node;                 // ranks x ops
  int64_t shard_size = 0;                                    // ranks per shard group
  int64_t tp = 1;                                            // ranks per tensor-parallel group
  double tokens_per_second_per_rank = 0;
  double overlap_efficiency = 0;
  Throughput throughput;  // rank 0's (train/throughput.hpp)
  // Per timed step, ranks x ops: ring bytes, seconds in flight, bus bandwidth (bytes/s).
  std::vector<double> comm_bus_bytes_per_step, comm_in_flight_seconds, comm_busbw;
  bool complete = false;
  // One per run that wrote rows: its first step (1-based) and a line describing it.
  std::vector<int64_t> segment_first_step;
  std::vector<std::string> segments;

  // Appends a row; `times` holds kStepPhases values for each of `ranks` ranks.
  void append_row(int64_t row_step, double row_loss, double row_grad_norm, double row_lr,
                  const std::vector<double>& times, int ranks);
  // Drops the rows after `last_step` (a resumed run computes them again); returns how many.
  size_t drop_rows_after(int64_t last_step);
};

// Rank 0 of a resumed run: the stages in an existing results.h5, with their rows ("" when the
// file does not exist). Throws zm::Error when it cannot be read.
std::vector<ResultsStage> read_results_history(const std::string& path);

}  // namespace zm
