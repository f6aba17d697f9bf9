// qgZ's gradient exchanges in the closing lines of a run: a line per stage under the table
// (StageFigures::table_note, io/stage_figures.hpp), "stage 3: 1.234 MiB per rank per step in 24
// quantized gradient all-to-alls", which the table's traffic columns do not show.
#pragma once

#include <memory>

#include "train/training_extensions.hpp"

namespace zm {

std::unique_ptr<TrainingExtension> make_all_to_all_figures();

}  // namespace zm
