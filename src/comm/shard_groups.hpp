// The names of hybrid sharding over the mesh's communicators (comm/mesh_comms.hpp), for callers
// that speak in shard layouts (core/shard_layout.hpp).
#pragma once

#include "comm/mesh_comms.hpp"
#include "core/shard_layout.hpp"

namespace zm {

using ShardGroupComms = MeshComms;

// The view of run_zero_mesh(deck, stage, world).
inline ShardLayout run_shard_layout(const Deck& deck, int stage, Communicator& world) {
  return shard_layout_of(run_zero_mesh(deck, stage, world));
}

}  // namespace zm
