// The device mesh of a ZeRO run (zero.shard_size, zero.secondary_shard_size) and where each kind
// of model state lives on it.
//
// Two dimensions today, outermost first: `replicate`, the shard groups, each holding a replica of
// the sharded model states; and `shard`, the consecutive ranks of one group, over which stages
// 1-3 partition every unit. Gradients are reduce-scattered along `shard`, then each shard is
// all-reduced along `replicate` (across the ranks holding the same shard, one per group);
// parameters are all-gathered along `shard`. With one group (shard_size 0, the default) this is
// plain ZeRO over all ranks. Stage 0 shards nothing, so it always has one group.
//
// The placements, per stage (core/stage_spec.hpp): what a stage replicates is replicated along
// every dimension; parameters and gradients it shards are sharded along `shard`; optimizer state
// it shards is sharded along `shard`, or under hpZ (hierarchical partitioning,
// zero.secondary_shard_size, stage 3) along `shard` and then `replicate`: each group shard is cut
// again into one sub-shard per replica, so that the optimizer state spans all ranks while the
// forward and backward gathers stay within the group.
//
// Tensor parallelism (parallel.tp) adds a third dimension, `tp`, innermost, so that the ranks
// of one tensor-parallel group are consecutive (on one node). The ZeRO dimensions then run over
// the ranks holding the same tensor slices: `shard` and `replicate` group ranks with equal tp
// coordinates, and each stage shards its slices of the model state over them exactly as it
// shards the whole model without tp. No ZeRO placement shards over `tp`: along it the ranks hold
// different slices (src/model/layout.hpp), not pieces of one buffer.
//
// The arithmetic alone, shared by the run (which builds the communicators, comm/mesh_comms.hpp)
// and the planner.
#pragma once

#include <cstdint>
#include <string>

#include "core/deck.hpp"
#include "core/device_mesh.hpp"
#include "core/stage_spec.hpp"

namespace zm {

inline const std::string kReplicateDim = "replicate";  // outer: the shard groups
inline const std::string kShardDim = "shard";          // inner: the ranks within a group
inline const std::string kTpDim = "tp";                // innermost: tensor parallelism

// Where each kind of model state lives on the mesh.
struct ModelPlacements {
  Placement params, grads, optim;
};

struct ZeroMesh {
  DeviceMesh mesh;  // replicate x shard x tp
  // Where a stage that shards the optimizer state puts it: along shard, or under hpZ along shard
  // and then replicate.
  Placement sharded_optimizer = Placement::shard({kShardDim});
  // The consecutive world ranks that share a node (node_ranks: zero.ranks_per_node, else MPI's
  // or the machine's); 0: all on one. For the bytes that leave nodes (comm/cross_node.hpp).
  int ranks_per_node = 0;

  int world() const { return mesh.world(); }  // every rank
  int tp() const { return mesh.size(kTpDim); }
  int data_parallel() const { return world() / tp(); }      // ranks holding the same slices
  int group_ranks() const { return mesh.size(kShardDim); }  // ranks per shard group
  int groups() const { return mesh.size(kReplicateDim); }
  bool hybrid() const { return groups() > 1; }
  bool hpz() const { return sharded_optimizer.shards(kReplicateDim); }
  // The pieces the sharded optimizer state cuts each group shard into: one per replica under
  // hpZ, else 1.
  int sub_shards() const { return pieces(mesh, sharded_optimizer) / group_ranks(); }
  // The stage's model state on this mesh.
  ModelPlacements placements(const StageSpec& spec) const;
};

// `data_parallel` x `tp` ranks: the data-parallel ranks in groups of `group_ranks` consecutive
// ones; hpZ (with more than one group) shards the optimizer state over both ZeRO dimensions.
ZeroMesh hybrid_mesh(int data_parallel, int group_ranks, bool hpz, int tp = 1);

// The mesh of `world` ranks at `stage` under the deck's zero.shard_size, or where the stage
// gathers parameters its zero.secondary_shard_size (hpZ; the two exclude each other).
// ranks_per_node: the ranks that share a node (zero.ranks_per_node wins when set); "node" uses
// it, capped at the world, and the mesh keeps it (ZeroMesh::ranks_per_node). Fails, naming the key,
// when the size does not divide the rank count.
ZeroMesh zero_mesh(const Deck& deck, int stage, int world, int ranks_per_node);

// The ranks "node" stands for: the deck's zero.ranks_per_node when set (to fake nodes), else
// `ranks_per_node` (MPI's shared-memory split in a run, the machine file's in the planner).
int64_t node_ranks(const Deck& deck, int64_t ranks_per_node);

// "all", "node" or the number, as the deck spells zero.shard_size.
std::string shard_size_name(const Deck& deck);
// One line for logs: the groups and the key that made them ("" with one group).
std::string describe_zero_mesh(const ZeroMesh& mesh, const Deck& deck);

}  // namespace zm
