// What the modules add to a run of a deck, in the terms of the layers below: each registers a
// configurer that reads its own deck keys once and fills its part of RunExtensions. The run
// (src/train) and the planner build from the same result, so that what is planned is what runs;
// below src/plan no layer sees the deck (the core's keys: plan/run_options.hpp).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/deck.hpp"
#include "model/attention_kernels.hpp"
#include "model/checkpoint_home.hpp"
#include "model/layout.hpp"
#include "model/model_parallel.hpp"
#include "zero/collective_strategy.hpp"
#include "zero/schedule.hpp"
#include "zero/state_tier.hpp"

namespace zm {

struct RunExtensions {
  // Strategies for the step's collectives (zero/collective_strategy.hpp), offered in this order.
  std::vector<std::shared_ptr<const StrategyProvider>> strategies;
  // The attention kernels the model runs, living as long as the program; nullptr: the plain ones.
  const AttentionKernels* attention = nullptr;
  // A tier that keeps some model state off the device (zero/state_tier.hpp); nullptr: none.
  std::shared_ptr<const StateTier> tier;
  // Where model.recompute keeps the blocks' outputs (model/checkpoint_home.hpp); nullptr: on the
  // device.
  std::shared_ptr<CheckpointHome> checkpoints;
  // How the model is cut along the model dimensions, living as long as the program; nullptr:
  // the model is held whole.
  const ModelParallelScheme* model_parallel = nullptr;
  // Where the model is held in parts (model/layout.hpp: ModelPart) along the model dimension
  // `part_dimension`: the part at each of its coordinates; empty: the whole model on every rank.
  std::string part_dimension;
  std::function<ModelPart(int coordinate)> model_part;
  // The depths such a model may have are multiples of this (0: of one block per part).
  int64_t depth_step = 0;
  // The models the rank at a coordinate holds at once, several micro-batches in flight, each with
  // its own activations, the first's scratch shared by the others (model/gpt.hpp: GPT::scratch,
  // gpt_buffers); empty: one.
  std::function<int(int coordinate)> models_held;
  // What the rank at a coordinate posts each step beside the engine's schedule (a pipeline's
  // transfers between its parts), priced with it; `partition` is of that rank's part.
  std::function<PlannedCollectives(int coordinate, const Partition& partition,
                                   const ZeroOptions& options, const ZeroMesh& mesh)>
      added_traffic;
  // The fraction of a data file's tokens (data.source), at its end, that training leaves to
  // another reader of the file (train/data.hpp, make_data_source); 0: training reads them all.
  double reserved_data_tail = 0;
};

// Fills a module's part of `extensions` for a run of `deck` at `stage`.
using RunConfigurer = std::function<void(const Deck& deck, int stage, RunExtensions& extensions)>;
void add_run_configurer(RunConfigurer configurer);

RunExtensions run_extensions(const Deck& deck, int stage);

// The attention kernels of a run: the extensions', or the core's plain ones.
const AttentionKernels& attention_kernels(const RunExtensions& extensions);

// The parameter layout each rank of a run holds: its slice under the run's scheme, or the whole
// model; of a model held in parts, the part at coordinate `part`.
ParamLayout run_layout(const Deck& deck, int stage, int part = 0);

}  // namespace zm
