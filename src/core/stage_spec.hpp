// The ZeRO stages as data: each stage is one record composing a gradient path, a parameter path
// and an optimizer partition, the only place a stage number means something; every other layer
// asks the record what the stage does (zero/factory.cpp builds an engine from it).
//
//            gradients                          parameters          optimizer state
//   stage 0  all-reduced in buckets             replicated          replicated
//   stage 1  reduce-scattered per unit          replicated          sharded
//   stage 2  reduce-scattered as backward ends  replicated          sharded
//   stage 3  reduce-scattered as backward ends  gathered per unit   sharded
//
// A new stage is a new row here and, where it needs a new path, that path's component in
// src/zero/paths (gradient_path.hpp, parameter_path.hpp).
#pragma once

#include <array>

#include "core/error.hpp"

namespace zm {

enum class GradientPath {
  AllReduce,                // full gradients, all-reduced in buckets as backward completes them
  ReduceScatterPerUnit,     // full gradients, each unit reduce-scattered into this rank's shard
  ReduceScatterAsComplete,  // only a shard kept: each unit's bucket reduce-scattered, then reused
};
enum class ParameterPath {
  Replicated,       // every rank holds every parameter
  GatheredPerUnit,  // a shard held; each unit all-gathered before use, with prefetch
};
enum class OptimizerPartition {
  Replicated,  // every rank updates everything
  Sharded,     // every rank updates its shard (and gathers parameters held more widely)
};

struct StageSpec {
  int stage;
  GradientPath gradients;
  ParameterPath parameters;
  OptimizerPartition optimizer;

  // Whether any model state is partitioned: zero.shard_size (hybrid sharding) applies.
  bool shards_states() const { return optimizer == OptimizerPartition::Sharded; }
  // Whether parameters are gathered per unit (a secondary partition of them may apply).
  bool gathers_parameters() const { return parameters == ParameterPath::GatheredPerUnit; }
  // Whether the gradients are kept as a shard only.
  bool shards_gradients() const { return gradients == GradientPath::ReduceScatterAsComplete; }
};

inline constexpr std::array<StageSpec, 4> kStageSpecs = {{
    {0, GradientPath::AllReduce, ParameterPath::Replicated, OptimizerPartition::Replicated},
    {1, GradientPath::ReduceScatterPerUnit, ParameterPath::Replicated, OptimizerPartition::Sharded},
    {2, GradientPath::ReduceScatterAsComplete, ParameterPath::Replicated,
     OptimizerPartition::Sharded},
    {3, GradientPath::ReduceScatterAsComplete, ParameterPath::GatheredPerUnit,
     OptimizerPartition::Sharded},
}};

// The record of `stage`; fails naming zero.stage when there is none.
inline const StageSpec& stage_spec(int stage) {
  for (const StageSpec& spec : kStageSpecs)
    if (spec.stage == stage) return spec;
  fail("zero.stage = {}: expected an integer in 0..{}", stage, kStageSpecs.back().stage);
}

}  // namespace zm
