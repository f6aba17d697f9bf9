// This rank's copies between host and device memory (host_transfer.hpp), measured step by step
// and added to each stage's results (io/stage_figures.hpp) in every run, zeros where nothing is
// offloaded: the per-rank datasets transfer_calls, transfer_bytes and transfer_seconds of
// /stage_<s> (one column per direction), the summary.json member
// host_transfers_per_rank_per_step, and the closing table's line per stage that made copies. The
// copies are reported as spans to the run's observer while a stage runs. `zeromini inspect`
// describes the datasets (describe_transfers).
#pragma once

#include <hdf5.h>

#include <memory>
#include <string>

#include "train/training_extensions.hpp"

namespace zm {

std::unique_ptr<TrainingExtension> make_transfer_figures();

// The copies of rank 0 over a stage of a results file, where it has them and some were made.
std::string describe_transfers(hid_t stage_group);

}  // namespace zm
