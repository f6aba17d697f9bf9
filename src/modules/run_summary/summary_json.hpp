// <output.dir>/summary.json: the headline figures of a run, for scripts (sweeps, plots).
#pragma once

#include <string>

#include "core/deck.hpp"
#include "io/run_records.hpp"

namespace zm {

// Where the run ran.
struct RunPlacement {
  int64_t nodes = 1;         // hosts (shared-memory domains) the ranks ran on
  int threads_per_rank = 1;  // Kokkos host threads of each rank
};

void write_summary_json(const std::string& path, const Deck& deck, const RunOutcome& outcome,
                        const RunPlacement& placement);

}  // namespace zm
