#include "core/shard_layout.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace zm {

ShardLayout shard_layout(const Deck& deck, int stage, int world, int ranks_per_node) {
  ShardLayout layout;
  layout.world = world;
  layout.group = world;
  const int64_t size = deck.zero.shard_size;
  if (stage == 0 || size == 0) return layout;
  int64_t group = size;
  if (size == kShardSizeNode) {
    const int64_t per_node = deck.zero.ranks_per_node > 0 ? deck.zero.ranks_per_node
                                                          : static_cast<int64_t>(ranks_per_node);
    group = std::min<int64_t>(per_node, world);
  }
  if (group < 1 || group > world || world % group != 0)
    fail(
        "zero.shard_size = {} ({} ranks per shard group): expected a divisor of the rank count "
        "{} (ranks are grouped consecutively, and every group holds a whole replica)",
        shard_size_name(deck), group, world);
  layout.group = static_cast<int>(group);
  return layout;
}

std::string shard_size_name(const Deck& deck) {
  if (deck.zero.shard_size == kShardSizeNode) return "node";
  if (deck.zero.shard_size == 0) return "all";
  return std::to_string(deck.zero.shard_size);
}

}  // namespace zm
