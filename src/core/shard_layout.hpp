// How the ranks of a run form shard groups (zero.shard_size): hybrid sharding.
//
// A shard group is `group` consecutive ranks that share one copy of the sharded model states:
// stages 1-3 partition every unit over the group's ranks, and the `groups()` groups each hold a
// replica of the whole. Gradients are reduce-scattered within the group, then each shard is
// all-reduced across the groups (over the `groups()` ranks that hold the same shard, one per
// group); parameters are all-gathered within the group. With one group (shard_size 0, the
// default) this is plain ZeRO over all ranks. Stage 0 shards nothing, so it always has one group.
//
// hpZ (ZeRO++'s hierarchical partitioning, zero.secondary_shard_size, stage 3): the parameters are
// sharded within the group as above, but the optimizer state and the gradients are sharded over
// all ranks: each group shard is split again into groups() sub-shards, one per rank holding that
// group shard (the replicas). Gradients are reduce-scattered within the group, then across the
// replicas into each rank's sub-shard; the updated sub-shards are all-gathered across the
// replicas, so that the forward and backward gathers stay within the group.
//
// The arithmetic alone, shared by the run (which builds the communicators) and the planner.
#pragma once

#include <string>

#include "core/deck.hpp"

namespace zm {

struct ShardLayout {
  int world = 1;     // ranks of the run
  int group = 1;     // ranks per shard group
  bool hpz = false;  // optimizer state and gradients over all ranks, in sub-shards
  int groups() const { return world / group; }
  // Sub-shards of each group shard: one per replica under hpZ, else 1.
  int sub_shards() const { return hpz ? groups() : 1; }
  bool hybrid() const { return group < world; }
  int group_of(int rank) const { return rank / group; }  // which group a rank is in
  int shard_of(int rank) const { return rank % group; }  // its rank within the group
};

// The layout of `world` ranks at `stage` under the deck's zero.shard_size, or at stage 3 its
// zero.secondary_shard_size (hpZ; the two exclude each other). ranks_per_node: the ranks that
// share a node (zero.ranks_per_node wins when set); "node" uses it, capped at the world. Fails,
// naming the key, when the size does not divide the rank count.
ShardLayout shard_layout(const Deck& deck, int stage, int world, int ranks_per_node);

// The ranks "node" stands for: the deck's zero.ranks_per_node when set (to fake nodes), else
// `ranks_per_node` (MPI's shared-memory split in a run, the machine file's in the planner).
int64_t node_ranks(const Deck& deck, int64_t ranks_per_node);

// "all", "node" or the number, as the deck spells zero.shard_size.
std::string shard_size_name(const Deck& deck);
// One line for logs: the groups and the key that made them ("" with one group).
std::string describe_shard_layout(const ShardLayout& layout, const Deck& deck);

}  // namespace zm
