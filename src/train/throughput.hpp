// A stage's throughput as the run reports it (results.h5, summary.json, the closing lines):
// tokens/s, achieved TFLOP/s and MFU from the model's FLOP count (model/flops.hpp) over the
// measured step time; the modules' figures may add to its line (io/stage_figures.hpp).
#pragma once

#include <string>

#include "core/deck.hpp"
#include "io/run_records.hpp"
#include "model/attention_kernels.hpp"

namespace zm {

// Over the stage's timed steps (all but the first when there are two or more), from this rank's
// records: its mean step time. `s.tokens_per_rank_per_step`, `s.ranks` and the mean step time
// must be set. `attention`: the kernels the model ran.
Throughput measure_throughput(const StageResult& s, const ModelConfig& model,
                              const AttentionKernels& attention, const PeakRate& peak);

// The one line a run closes with, e.g. "stage 3: 12,345 tokens/s, 0.61 TFLOP/s per device (1.22
// total), MFU 4.1% of 15 TFLOP/s (--peak-tflops)", and what the stage's figures add to it.
std::string throughput_line(const StageResult& s);

}  // namespace zm
