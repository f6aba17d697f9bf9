// A thin view of a ZeRO mesh (core/zero_mesh.hpp) in the terms of hybrid sharding: the ranks,
// the ranks per shard group and whether hpZ applies. Reports and their tests read it; it holds
// no arithmetic of its own: every figure comes from the mesh and converts back to it.
#pragma once

#include "core/deck.hpp"
#include "core/zero_mesh.hpp"

namespace zm {

struct ShardLayout {
  int world = 1;     // ranks of the run
  int group = 1;     // ranks per shard group
  bool hpz = false;  // optimizer state over all ranks, in sub-shards

  ZeroMesh mesh() const { return hybrid_mesh(world, group, hpz); }
  operator ZeroMesh() const { return mesh(); }  // NOLINT: a view converts to what it views
  int groups() const { return mesh().groups(); }
  int sub_shards() const { return mesh().sub_shards(); }
  bool hybrid() const { return mesh().hybrid(); }
};

ShardLayout shard_layout_of(const ZeroMesh& mesh);

// The view of zero_mesh(deck, stage, world, ranks_per_node).
ShardLayout shard_layout(const Deck& deck, int stage, int world, int ranks_per_node);

}  // namespace zm
