// What a pipeline adds to `zeromini plan`: the --pp axis, the bubble priced into the step, and the
// mesh, the stage priced and the bubble in the table and the CSV. The memory of each stage (its
// micro-batches in flight) and the transfers between stages come with the run's own declarations
// (plan/run_extensions.hpp: models_held, added_traffic).
#pragma once

namespace zm::pipeline {

void add_pipeline_plan();

}  // namespace zm::pipeline
