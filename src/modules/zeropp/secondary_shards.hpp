// hpZ, ZeRO++'s secondary partition (zero.secondary_shard_size, stage 3): the parameters sharded
// within groups of consecutive ranks, so that the forward and backward gathers stay in the
// group, while the optimizer state and the gradients stay sharded over all ranks. The core holds
// the placements (core/zero_mesh.hpp: the optimizer state along shard and then replicate, each
// group shard cut into sub-shards) and the schedule follows them (the replica reduction becomes a
// reduce-scatter into the sub-shards, the updated sub-shards are gathered across the groups); this
// module owns the key and chooses the groups through a mesh configurer.
#pragma once

#include <string>

#include "core/deck.hpp"

namespace zm {

// Registers the key, the mesh configurer and the plan header's line.
void add_secondary_shards();

}  // namespace zm
