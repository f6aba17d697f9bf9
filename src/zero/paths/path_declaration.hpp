// What a path (paths/gradient_path.hpp, paths/parameter_path.hpp) allocates and posts in one
// optimizer step on every rank, for the planner: element sizes come from the deck's precision, so
// any build prices any precision without a typed engine.
#pragma once

#include <cstdint>
#include <vector>

#include "zero/engine.hpp"

namespace zm {

using PlannedCollectives = std::vector<ZeroEngine::PlannedCollective>;

// The traffic comes as whole-step collectives and as counts per unit. The counts of both paths
// add up, and ZeroEngine::declared_traffic turns their sum into collectives unit by unit
// (per_unit_traffic, zero/factory.cpp), so that the list keeps the order in which a step posts
// them whatever path posts which.
struct PathDeclaration {
  std::vector<BufferSpec> buffers;  // after the model state, in the order the path allocates them
  PlannedCollectives step_collectives;  // not tied to one unit (all-reduce buckets)
  int64_t reductions_per_unit = 0;      // reduce-scatters of each padded unit in the shard group
  int64_t gathers_per_unit = 0;         // all-gathers of each padded unit in the shard group
  // > 0 (qwZ): those all-gathers move each rank's shard as a packed int8 segment in blocks of this
  // many elements (kernels/quantize.hpp), as bytes, in place of the compute type.
  int64_t gather_quantize_block = 0;
};

}  // namespace zm
