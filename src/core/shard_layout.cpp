#include "core/shard_layout.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/stage_spec.hpp"

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

int64_t node_ranks(const Deck& deck, int64_t ranks_per_node) {
  return deck.zero.ranks_per_node > 0 ? deck.zero.ranks_per_node : ranks_per_node;
}

ShardLayout shard_layout(const Deck& deck, int stage, int world, int ranks_per_node) {
  ShardLayout layout;
  layout.world = world;
  layout.group = world;
  const ZeroConfig& z = deck.zero;
  const StageSpec& spec = stage_spec(stage);
  const bool secondary = spec.gathers_parameters() && z.secondary_shard_size != 0;
  if (secondary && z.shard_size != 0)
    fail(
        "zero.secondary_shard_size = {} with zero.shard_size = {}: hpZ shards the optimizer "
        "state over all ranks and only the parameters within groups; set one of the two",
        size_name(z.secondary_shard_size), size_name(z.shard_size));
  if (secondary) {
    layout.group = group_ranks(deck, "zero.secondary_shard_size", z.secondary_shard_size, world,
                               ranks_per_node);
    layout.hpz = layout.group < world;
  } else if (spec.shards_states() && z.shard_size != 0) {
    layout.group = group_ranks(deck, "zero.shard_size", z.shard_size, world, ranks_per_node);
  }
  return layout;
}

std::string shard_size_name(const Deck& deck) {
  return size_name(deck.zero.shard_size);
}

std::string describe_shard_layout(const ShardLayout& layout, const Deck& deck) {
  if (!layout.hybrid()) return "";
  if (layout.hpz)
    return "hpZ: parameters in " + std::to_string(layout.groups()) + " groups of " +
           std::to_string(layout.group) + " ranks, optimizer state over all " +
           std::to_string(layout.world) +
           " ranks (zero.secondary_shard_size = " + size_name(deck.zero.secondary_shard_size) + ")";
  return "hybrid sharding: " + std::to_string(layout.groups()) + " shard groups of " +
         std::to_string(layout.group) +
         " ranks (zero.shard_size = " + size_name(deck.zero.shard_size) + ")";
}

}  // namespace zm
