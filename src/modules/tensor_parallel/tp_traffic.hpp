// The traffic along tp (the model's own all-reduces, apart from ZeRO's), measured step by step
// and added to each stage's results (io/stage_figures.hpp): the per-rank datasets
// comm_bytes_tensor_parallel and comm_seconds_tensor_parallel and the `tp` attribute of
// /stage_<s>, the summary.json member bytes_per_rank_per_step_tensor_parallel, and the closing
// table's line per stage with tp > 1.
#pragma once

#include <memory>

#include "train/training_extensions.hpp"

namespace zm {

std::unique_ptr<TrainingExtension> make_tensor_parallel_traffic();

}  // namespace zm
