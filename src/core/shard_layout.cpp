#include "core/shard_layout.hpp"

namespace zm {

ShardLayout shard_layout_of(const ZeroMesh& mesh) {
  return ShardLayout{mesh.world(), mesh.group_ranks(), mesh.hpz()};
}

ShardLayout shard_layout(const Deck& deck, int stage, int world, int ranks_per_node) {
  return shard_layout_of(zero_mesh(deck, stage, world, ranks_per_node));
}

}  // namespace zm
