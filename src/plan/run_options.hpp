// The input deck mapped onto what the layers below the plan take: the one place where the deck's
// keys become the ZeRO layer's options (zero/zero_options.hpp) and a run's mesh. The trainer and
// the planner both build from these functions, so that a run and its plan read a key alike, and
// nothing in src/zero, src/model, src/kernels or src/comm sees the deck.
#pragma once

#include "comm/communicator.hpp"
#include "core/deck.hpp"
#include "core/zero_mesh.hpp"
#include "zero/zero_options.hpp"

namespace zm {

// The ZeRO layer's options at `stage` on `mesh` (a module's tier may keep state off the device
// only on some meshes: zero/state_tier.hpp), for a rank of part `part` of a model held in parts.
ZeroOptions zero_options(const Deck& deck, int stage, const ZeroMesh& mesh, int part = 0);

// The ranks of `world` that share a node (collective: MPI's shared-memory split, unless
// zero.ranks_per_node says; "node" shard sizes use it, and what a module counts by node).
int run_ranks_per_node(const Deck& deck, Communicator& world);
// The mesh of a run on `world` under the deck (collective, as run_ranks_per_node).
ZeroMesh run_zero_mesh(const Deck& deck, int stage, Communicator& world);

}  // namespace zm
