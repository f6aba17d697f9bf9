// A stage's throughput as the run reports it (results.h5, and what the modules write of the run):
// tokens/s and achieved TFLOP/s from the model's FLOP count (model/flops.hpp) over the measured
// step time.
#pragma once

#include "core/deck.hpp"
#include "io/run_records.hpp"
#include "model/attention_kernels.hpp"

namespace zm {

// Over the stage's timed steps (all but the first when there are two or more), from this rank's
// records: its mean step time. `s.tokens_per_rank_per_step`, `s.ranks` and the mean step time
// must be set. `attention`: the kernels the model ran.
Throughput measure_throughput(const StageResult& s, const ModelConfig& model,
                              const AttentionKernels& attention);

}  // namespace zm
