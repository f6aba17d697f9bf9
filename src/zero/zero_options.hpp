// What the ZeRO layer is told about a run, as plain values: the precision policy, the micro-steps
// of a step, the bucket, overlap and prefetch settings, the compression of qwZ and qgZ, and where
// ZeRO-Offload keeps the model state. The plan layer fills one per stage from the run's settings,
// in one function (plan/run_options.hpp: zero_options), so that the engine, its paths, the step's
// schedule and the planner's declarations read the same values and no file below the plan and io
// layers parses a setting. Each field names the key it comes from.
#pragma once

#include <cstdint>

#include "core/offload.hpp"
#include "core/precision.hpp"

namespace zm {

struct ZeroOptions {
  // train.precision with train.reduce_precision: the types parameters, gradients and their
  // collectives are stored and summed in.
  PrecisionPolicy policy;
  int64_t grad_accum = 1;   // train.grad_accum: micro-steps per optimizer step
  double bucket_mb = 25.0;  // zero.bucket_mb: stage 0's gradient buckets close at this size
  // zero.overlap: collectives waited where the step needs their data rather than where they are
  // posted (two gradient buckets, two replica gather buffers, stage 3's prefetch).
  bool overlap = true;
  int64_t prefetch = 1;  // zero.prefetch: stage 3's units gathered ahead of use (with overlap)

  // qwZ, zero.quantize_weights != "none": stage 3's unit gathers (and hpZ's replica gather under
  // mixed precision) move int8 blocks.
  bool quantize_weights = false;
  // zero.quantize_block: elements per block with one fp32 scale (qwZ's and qgZ's).
  int64_t quantize_block = 2048;
  // qgZ, zero.quantize_grads != "none": the gradient reductions as quantized all-to-alls, of
  // codes of grad_bits (zero.quantize_grads: 8 for "int8", 4 for "int4").
  bool quantize_grads = false;
  int grad_bits = 8;
  bool error_feedback = false;       // zero.error_feedback: qgZ keeps each rank's residual
  bool stochastic_rounding = false;  // zero.grad_rounding = "stochastic": qgZ's codes drawn
  int64_t seed = 1337;               // train.seed: keys qgZ's stochastic rounding

  // zero.offload_optimizer and zero.offload_params as they apply at this stage on this mesh
  // (core/offload.hpp: offload_of, asked once when the options are made).
  Offload offload;
};

}  // namespace zm
