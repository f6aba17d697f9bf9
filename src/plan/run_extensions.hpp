// What the modules of this program (core/modules.hpp) add to a run of a deck, in the terms of
// the layers below: each module registers a configurer, which reads its own deck keys once and
// fills its part of RunExtensions (the kernels the model runs, the strategies of the step's
// collectives, where the optimizer state lives, ...). The run (src/train) and the planner build
// from the same result, so that what is planned is what runs. The core's own keys are mapped
// beside it (plan/run_options.hpp); below src/plan no layer sees the deck.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "core/deck.hpp"
#include "model/attention_kernels.hpp"
#include "model/layout.hpp"
#include "model/model_parallel.hpp"
#include "zero/collective_strategy.hpp"
#include "zero/state_tier.hpp"

namespace zm {

struct RunExtensions {
  // Strategies for the step's collectives (zero/collective_strategy.hpp), offered each entry in
  // this order.
  std::vector<std::shared_ptr<const StrategyProvider>> strategies;
  // The attention kernels the model runs (model/attention_kernels.hpp), an object that lives as
  // long as the program; nullptr: the core's plain ones.
  const AttentionKernels* attention = nullptr;
  // A memory tier that keeps some model state off the device (zero/state_tier.hpp); nullptr:
  // everything on the device.
  std::shared_ptr<const StateTier> tier;
  // How the model is cut into slices along the model dimensions (model/model_parallel.hpp), an
  // object that lives as long as the program; nullptr: the model is held whole.
  const ModelParallelScheme* model_parallel = nullptr;
  // The fraction of a data file's tokens (data.source), at its end, that training leaves to
  // another reader of the file (train/data.hpp, make_data_source); 0: training reads them all.
  double reserved_data_tail = 0;
};

// Fills a module's part of `extensions` for a run of `deck` at `stage`.
using RunConfigurer = std::function<void(const Deck& deck, int stage, RunExtensions& extensions)>;
void add_run_configurer(RunConfigurer configurer);

// Every registered configurer applied, in registration order.
RunExtensions run_extensions(const Deck& deck, int stage);

// The attention kernels of a run: the extensions', or the core's plain ones.
const AttentionKernels& attention_kernels(const RunExtensions& extensions);

// The parameter layout each rank of a run of `deck` at `stage` holds: its slice of the model cut
// by the run's scheme into the model dimensions' size (core/zero_mesh.hpp: model_parallel_size),
// or the whole model.
ParamLayout run_layout(const Deck& deck, int stage);

}  // namespace zm
