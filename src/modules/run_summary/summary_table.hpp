// The table rank 0 prints at the end of a run, before the figure of merit: one row per stage
// (its times, the modules' columns, memory and traffic per rank), the lines under it (traffic
// across shard groups and nodes, the stage figures' notes) and each stage's throughput line
// (tokens/s, TFLOP/s, MFU against its peak, what the stage's figures add to it), then what the
// run reports say after the throughput (io/run_report.hpp).
#pragma once

#include <string>
#include <vector>

#include "core/deck.hpp"
#include "io/run_records.hpp"

namespace zm {

std::string summary_table(const Deck& deck, const std::vector<StageResult>& results);

}  // namespace zm
