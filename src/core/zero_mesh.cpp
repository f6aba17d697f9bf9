#include "core/zero_mesh.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace zm {

namespace {

std::string size_name(int64_t size) {
  if (size == kShardSizeNode) return "node";
  if (size == 0) return "all";
  return std::to_string(size);
}

// Ranks per group for a shard size (0 = all, kShardSizeNode = a node), checked against the world.
int group_ranks(const Deck& deck, const char* key, int64_t size, int world, int ranks_per_node) {
  int64_t group = size == 0 ? world : size;
  if (size == kShardSizeNode) {
    group = std::min<int64_t>(node_ranks(deck, ranks_per_node), world);
  }
  if (group < 1 || group > world || world % group != 0)
    fail(
        "{} = {} ({} ranks per shard group): expected a divisor of the rank count {} (ranks are "
        "grouped consecutively, and every group holds a whole replica)",
        key, size_name(size), group, world);
  return static_cast<int>(group);
}

}  // namespace

ModelPlacements ZeroMesh::placements(const StageSpec& spec) const {
  const Placement sharded = Placement::shard({kShardDim});
  ModelPlacements p;
  if (spec.gathers_parameters()) p.params = sharded;
  if (spec.shards_gradients()) p.grads = sharded;
  if (spec.shards_states()) p.optim = sharded_optimizer;
  return p;
}

ZeroMesh hybrid_mesh(int world, int group_ranks, bool hpz) {
  ZM_ASSERT(group_ranks >= 1 && world % group_ranks == 0, "{} ranks in groups of {}", world,
            group_ranks);
  ZeroMesh m;
  m.mesh = DeviceMesh({{kReplicateDim, world / group_ranks}, {kShardDim, group_ranks}});
  if (hpz && m.hybrid()) m.sharded_optimizer = Placement::shard({kShardDim, kReplicateDim});
  return m;
}

int64_t node_ranks(const Deck& deck, int64_t ranks_per_node) {
  return deck.zero.ranks_per_node > 0 ? deck.zero.ranks_per_node : ranks_per_node;
}

bool mesh_uses_node(const Deck& deck, int stage) {
  const StageSpec& spec = stage_spec(stage);
  return (spec.shards_states() && deck.zero.shard_size == kShardSizeNode) ||
         (spec.gathers_parameters() && deck.zero.secondary_shard_size == kShardSizeNode);
}

ZeroMesh zero_mesh(const Deck& deck, int stage, int world, int ranks_per_node) {
  const ZeroConfig& z = deck.zero;
  const StageSpec& spec = stage_spec(stage);
  const bool secondary = spec.gathers_parameters() && z.secondary_shard_size != 0;
  if (secondary && z.shard_size != 0)
    fail(
        "zero.secondary_shard_size = {} with zero.shard_size = {}: hpZ shards the optimizer "
        "state over all ranks and only the parameters within groups; set one of the two",
        size_name(z.secondary_shard_size), size_name(z.shard_size));
  if (secondary) {
    const int group = group_ranks(deck, "zero.secondary_shard_size", z.secondary_shard_size, world,
                                  ranks_per_node);
    return hybrid_mesh(world, group, true);
  }
  if (spec.shards_states() && z.shard_size != 0)
    return hybrid_mesh(
        world, group_ranks(deck, "zero.shard_size", z.shard_size, world, ranks_per_node), false);
  return hybrid_mesh(world, world, false);
}

std::string shard_size_name(const Deck& deck) {
  return size_name(deck.zero.shard_size);
}

std::string describe_zero_mesh(const ZeroMesh& mesh, const Deck& deck) {
  if (!mesh.hybrid()) return "";
  const std::string groups =
      std::to_string(mesh.groups()) + " groups of " + std::to_string(mesh.group_ranks()) + " ranks";
  if (mesh.hpz())
    return "hpZ: parameters in " + groups + ", optimizer state over all " +
           std::to_string(mesh.world()) +
           " ranks (zero.secondary_shard_size = " + size_name(deck.zero.secondary_shard_size) + ")";
  return "hybrid sharding: " + std::to_string(mesh.groups()) + " shard groups of " +
         std::to_string(mesh.group_ranks()) +
         " ranks (zero.shard_size = " + size_name(deck.zero.shard_size) + ")";
}

}  // namespace zm
