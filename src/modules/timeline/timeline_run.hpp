// What the module adds to a run (train/training_extensions.hpp):
//   - every stage's collectives recorded step by step (collective_records.hpp), their exposure
//     and bus figures added to the stage's results (exposure_figures.hpp);
//   - with output.trace, the run's Tracer as its span observer, trace.json opened with results.h5
//     (trace_file.hpp), a window per step (the previous step's window written before a step
//     begins, and the last at the end of the stage), the collectives on the communication track,
//     and the file finished at the end of the run.
#pragma once

#include <memory>

#include "train/training_extensions.hpp"

namespace zm {

std::unique_ptr<TrainingExtension> make_timeline_run();

}  // namespace zm
