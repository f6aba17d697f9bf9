// What one rank of a training run allocates and moves, declared once: the trainer allocates and
// posts exactly this, and the planner sums the same lists at any scale. The deck gives the ZeRO
// layer's options (plan/run_options.hpp) and the model's sizes.
#pragma once

#include <vector>

#include "core/deck.hpp"
#include "core/memory.hpp"
#include "model/attention_kernels.hpp"
#include "zero/engine.hpp"
#include "zero/partition.hpp"

namespace zm {

// The trainer's per-step statistics, {loss sum, gradient sum of squares} in fp32, all-reduced
// once every step (the schedule's StepStatistics).
BufferSpec step_stats_buffer(const ParamLayout& layout);

// Every buffer a rank allocates on the mesh: the stage's, the model's (running `attention`; as
// many as it holds at once) and the step's own. `part`: the coordinate of a model held in parts.
std::vector<BufferSpec> run_buffers(const Deck& deck, int stage, const ZeroMesh& mesh,
                                    const AttentionKernels& attention, int part = 0);

// Every collective a rank posts in one step, the entries of its schedule: the stage's, the
// model's own over its model-parallel group, the step statistics' all-reduce (over all ranks) and
// what modules post beside them. `partition` is over the ranks of the mesh's shard dimension, of
// part `part` of a model held in parts.
std::vector<PlannedCollective> run_traffic(const Deck& deck, int stage, const Partition& partition,
                                           const ZeroMesh& mesh, int part = 0);

}  // namespace zm
