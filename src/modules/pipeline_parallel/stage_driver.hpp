// The pipeline's micro-step driver (train/micro_step_driver.hpp): each rank runs its stage's part
// of the model (model/layout.hpp: ModelPart) through the 1F1B schedule (one_f_one_b.hpp), one
// model per micro-batch in flight, sending activations forward and their gradients back across
// each boundary; then it sums the tied embedding's gradient between the first and last stages.
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
//   - on the first and last stages, the tied embedding's gradient summed between them: an
//     all-reduce of the optimizer's piece of the embedding unit (padded, so that every rank's
//     piece is as long) in the reduce type.
// `partition` is the stage's; `zero_stage` says the optimizer's placement on `mesh`.
PlannedCollectives stage_traffic(int stage, int stages, int64_t micro_batches, int64_t activation,
                                 const Partition& partition, const ZeroOptions& options,
                                 const ZeroMesh& mesh, int zero_stage);

std::unique_ptr<MicroStepDriver> make_stage_driver();

}  // namespace zm::pipeline
