// The pipeline's micro-step driver (train/micro_step_driver.hpp): each rank runs its stage's part
// of the model (model/layout.hpp: ModelPart) through the 1F1B schedule (one_f_one_b.hpp), one
// model per micro-batch in flight, sending activations forward and their gradients back across
// each boundary; then it sums the tied embedding's gradient between the first and last stages.
#pragma once

#include <memory>

#include "comm/mesh_comms.hpp"
#include "train/micro_step_driver.hpp"

namespace zm::pipeline {

inline const char* const kPipeDim = "pp";

// The communicators a pipeline adds (MeshComms::add_split): each boundary's two ranks, split in
// two rounds (even and odd boundaries) so that every rank is in at most one pair per round, and
// the tied embedding's pair (the first and last stage). Collective over the world.
void add_pipe_communicators(MeshComms& comms);

std::unique_ptr<MicroStepDriver> make_stage_driver();

}  // namespace zm::pipeline
