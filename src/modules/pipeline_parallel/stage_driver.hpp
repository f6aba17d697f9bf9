// The pipeline's micro-step driver (train/micro_step_driver.hpp): each rank runs its stage's part
// of the model (model/layout.hpp: ModelPart) through the 1F1B schedule (one_f_one_b.hpp), one
// model per micro-batch in flight, sending activations forward and their gradients back across
// each boundary; the first and last stages sum the tied embedding's gradient between them.
#pragma once

#include <memory>

#include "comm/mesh_comms.hpp"
#include "train/micro_step_driver.hpp"
#include "zero/schedule.hpp"

namespace zm::pipeline {

inline const char* const kPipeDim = "pp";

// The communicators a pipeline adds (MeshComms::add_split): each boundary's two ranks, split in
// two rounds (even and odd boundaries) so that every rank is in at most one pair per round, and
// the tied embedding's pair (the first and last stage). Collective over the world.
void add_pipe_communicators(MeshComms& comms);

// What the rank of stage `stage` of `stages` posts in a step beside the engine's schedule, as the
// driver posts it and the planner prices it (plan/run_extensions.hpp: added_traffic):
//   - on each boundary it has, every micro-batch's activation and its gradient: a broadcast of
//     `activation` elements (micro_batch x seq_len x dim) in the compute type on the boundary's
//     two ranks, rooted at the sender;
//   - on the first and last stages, before each reduction of the embedding unit (once a step at
//     ZeRO stages 0-1, every micro-step at 2-3), the tied embedding's gradient summed between
//     them: an all-reduce of the whole unit (padded) in the reduce type; then, where the first
//     stage holds its token part (model/held_token_grads.hpp), a broadcast of the wte rows from
//     the first stage to the last.
// `partition` is the stage's; `zero_stage` the ZeRO stage.
PlannedCollectives stage_traffic(int stage, int stages, int64_t micro_batches, int64_t activation,
                                 const Partition& partition, const ZeroOptions& options,
                                 const ZeroMesh& mesh, int zero_stage);

std::unique_ptr<MicroStepDriver> make_stage_driver();

}  // namespace zm::pipeline
