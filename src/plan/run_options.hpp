// The input deck mapped onto what the layers below the plan take: the one place where the deck's
// keys become the ZeRO layer's options (zero/zero_options.hpp). The trainer and the planner both
// build from it, so that a run and its plan read a key alike, and nothing in src/zero sees the
// deck.
#pragma once

#include "core/deck.hpp"
#include "core/zero_mesh.hpp"
#include "zero/zero_options.hpp"

namespace zm {

// The ZeRO layer's options at `stage` on `mesh` (the mesh decides whether the offloaded gradient
// shard streams to the host: core/offload.hpp).
ZeroOptions zero_options(const Deck& deck, int stage, const ZeroMesh& mesh);

}  // namespace zm
