// What the ZeRO layer is told about a run, as plain values, each field naming the deck key it
// comes from: plan/run_options.hpp (zero_options) fills one per stage, so that the engine, its
// paths, the step's schedule and the planner read the same values.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/precision.hpp"
#include "model/model_parallel.hpp"
#include "zero/state_tier.hpp"

namespace zm {

class StrategyProvider;

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

  // The strategies modules offer for the step's collectives (zero/collective_strategy.hpp).
  std::vector<std::shared_ptr<const StrategyProvider>> strategies;

  // Where the model state lives at this stage on this mesh, and the module's tier that keeps some
  // of it off the device (zero/state_tier.hpp; nullptr: all on the device).
  StateHomes homes;
  std::shared_ptr<const StateTier> tier;

  // The model's own collectives over its model-parallel group (model/gpt.hpp: gpt_sync_posts of
  // the run's micro-batch; none without model parallelism), which the step's schedule lists.
  std::vector<ModelSyncPost> model_posts;
};

}  // namespace zm
