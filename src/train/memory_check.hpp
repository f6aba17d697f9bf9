// Out-of-memory predicted, not suffered: before a stage allocates anything, the planner's bytes
// per rank are compared with the memory this rank can have.
#pragma once

#include <vector>

#include "comm/communicator.hpp"
#include "core/deck.hpp"
#include "core/memory.hpp"

namespace zm {

// Throws zm::Error (on every rank alike) naming the planned bytes per category and the memory
// available when the run cannot fit: device memory in GPU builds, otherwise the host's
// MemAvailable shared by the ranks on this node.
void check_memory_fits(const Deck& deck, int stage, Communicator& comm);

// Collective: every rank's figures, on rank 0 (empty elsewhere).
std::vector<MemoryFigures> gather_memory_figures(const MemoryFigures& mine, Communicator& comm);

}  // namespace zm
