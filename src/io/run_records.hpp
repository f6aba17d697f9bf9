// What a run measured, as plain structs: the trainer fills them; the results file and the reports
// read them.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "comm/communicator.hpp"
#include "core/memory.hpp"
#include "io/stage_figures.hpp"

namespace zm {

struct StepTimes {
  double forward = 0;    // forward passes of all micro-steps (includes waits inside them)
  double backward = 0;   // backward passes, and waiting for the last gradient collectives
  double comm_wait = 0;  // time blocked on collectives anywhere in the step
  double optimizer = 0;  // norm, clipping, AdamW and parameter re-distribution
  double total = 0;
};

struct StepRecord {
  int64_t step = 0;      // 0-based
  double loss = 0;       // mean over the global batch
  double grad_norm = 0;  // of the averaged gradients, before clipping
  double lr = 0;
  bool finite = true;  // loss and gradient norm are finite (else no update was made)
  StepTimes times;
  CommStats comm;              // this step's collectives on this rank
  CommStats comm_inter_group;  // the part of `comm` that crossed shard groups (hybrid sharding)
};

// A stage's throughput over its timed steps (train/throughput.cpp; model/flops.hpp counts).
struct Throughput {
  double tokens_per_second = 0;                                    // all ranks
  double step_seconds = 0;                                         // this rank's mean step time
  double model_flops_per_token = 0, hardware_flops_per_token = 0;  // the whole model
  double model_flops_per_step = 0, hardware_flops_per_step = 0;    // all ranks
  double tflops_per_device = 0;  // model FLOPs per rank / step_seconds, in 1e12
  double tflops_total = 0;       // all ranks
  double hardware_tflops_per_device = 0;
};

struct StageResult {
  int stage = 0;
  int ranks = 1;
  std::vector<StepRecord> steps;              // this rank's records
  MemoryFigures memory;                       // this rank's ledger after the stage ran
  std::vector<MemoryFigures> memory_by_rank;  // rank 0 only: every rank's figures
  double tokens_per_rank_per_step = 0;        // the global batch's tokens / ranks
  int64_t param_count = 0;                    // real vocabulary
  int64_t padded_param_count = 0;             // as allocated (padded vocabulary)
  double tokens_per_second_per_rank = 0;      // figure of merit: mean over timed steps
  StepTimes mean_times;
  CommStats comm_per_step;              // mean per step on this rank
  CommStats comm_inter_group_per_step;  // the part of it across shard groups
  int shard_size = 1;      // ranks per shard group (all the data-parallel ranks with one group)
  int model_parallel = 1;  // ranks per model-parallel group
  bool stopped_non_finite = false;
  Throughput throughput;
  // What the modules measured of the stage (io/stage_figures.hpp), in the order they added it.
  std::vector<std::shared_ptr<StageFigures>> figures;
};

// How a run ended, which decides the exit status (non-finite exits non-zero). Terminated: a stop
// signal, with a checkpoint written (a requeued job continues); TerminatedUnsaved: a stop signal
// with no checkpoint configured (results flushed); NotStarted: a stop signal before the first step.
enum class RunEnd { Completed, Terminated, TerminatedUnsaved, NotStarted, NonFinite };

// The status in results.h5 and summary.json.
inline const char* run_end_name(RunEnd end) {
  const char* const names[] = {"completed", "terminated", "terminated_unsaved",
                               "terminated_before_start", "stopped_non_finite"};
  return names[static_cast<int>(end)];
}

struct RunOutcome {
  std::vector<StageResult> stages;
  RunEnd end = RunEnd::Completed;
};

}  // namespace zm
