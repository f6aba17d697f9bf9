// How the ranks of a run form shard groups (zero.shard_size): hybrid sharding.
//
// A shard group is `group` consecutive ranks that share one copy of the sharded model states:
// stages 1-3 partition every unit over the group's ranks, and the `groups()` groups each hold a
// replica of the whole. Gradients are reduce-scattered within the group, then each shard is
// all-reduced across the groups (over the `groups()` ranks that hold the same shard, one per
// group); parameters are all-gathered within the group. With one group (shard_size 0, the
// default) this is plain ZeRO over all ranks. Stage 0 shards nothing, so it always has one group.
//
// The arithmetic alone, shared by the run (which builds the communicators) and the planner.
#pragma once

#include <string>

#include "core/deck.hpp"

namespace zm {

struct ShardLayout {
  int world = 1;  // ranks of the run
  int group = 1;  // ranks per shard group
  int groups() const { return world / group; }
  bool hybrid() const { return group < world; }
  int group_of(int rank) const { return rank / group; }  // which group a rank is in
  int shard_of(int rank) const { return rank % group; }  // its rank within the group
};

// The layout of `world` ranks at `stage` under the deck's zero.shard_size. ranks_per_node: the
// ranks that share a node (zero.ranks_per_node wins when set); "node" uses it, capped at the
// world. Fails, naming the key, when the shard size does not divide the rank count.
ShardLayout shard_layout(const Deck& deck, int stage, int world, int ranks_per_node);

// "all", "node" or the number, as the deck spells zero.shard_size.
std::string shard_size_name(const Deck& deck);

}  // namespace zm
