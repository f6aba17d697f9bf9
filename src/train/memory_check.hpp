// The memory every rank held, gathered for the stage's results.
#pragma once

#include <vector>

#include "comm/communicator.hpp"
#include "core/memory.hpp"

namespace zm {

// Collective: every rank's figures, on rank 0 (empty elsewhere).
std::vector<MemoryFigures> gather_memory_figures(const MemoryFigures& mine, Communicator& comm);

}  // namespace zm
