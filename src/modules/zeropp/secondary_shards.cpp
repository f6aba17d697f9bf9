#include "modules/zeropp/secondary_shards.hpp"

#include <fmt/format.h>

#include <optional>

#include "core/deck_keys.hpp"
#include "core/error.hpp"
#include "core/zero_mesh.hpp"
#include "plan/plan_extensions.hpp"

namespace zm {

namespace {

const char* const kKey = "zero.secondary_shard_size";

// The groups where the stage gathers parameters and the key is set; it excludes hybrid sharding.
std::optional<ShardGroups> secondary_groups(const Deck& deck, const StageSpec& spec, int world,
                                            int ranks_per_node) {
  const int64_t size = deck.value<int64_t>(kKey);
  if (!spec.gathers_parameters() || size == 0) return std::nullopt;
  if (deck.zero.shard_size != 0)
    fail(
        "{}: zero.secondary_shard_size = {} with zero.shard_size = {} (set at {}): hpZ shards "
        "the optimizer state over all ranks and only the parameters within groups; set one of "
        "the two",
        deck.where(kKey), shard_size_text(size), shard_size_text(deck.zero.shard_size),
        deck.where("zero.shard_size"));
  const int group = shard_group_ranks(deck, kKey, size, world, ranks_per_node);
  return ShardGroups{
      group, true,
      fmt::format("hpZ: parameters in {} groups of {} ranks, optimizer state over "
                  "all {} ranks (zero.secondary_shard_size = {})",
                  world / group, group, world * model_parallel_size(deck), shard_size_text(size))};
}

std::string hpz_plan_note(const Deck& deck) {
  if (deck.value<int64_t>(kKey) == 0) return "";
  return "  hpZ: zero.secondary_shard_size set: at stage 3 the parameters are sharded within "
         "groups (groups x ranks per group), the optimizer state over all ranks\n";
}

}  // namespace

void add_secondary_shards() {
  add_deck_keys({deck_keys::shard_size(
      "zeropp", "zero", "secondary_shard_size",
      "stage 3 (hpZ): a secondary copy of the parameters sharded within groups of this many "
      "ranks (\"node\": a node), so that gathers stay in the group; optimizer state and "
      "gradients stay sharded over all ranks; 0 = off")});
  add_mesh_configurer(secondary_groups);
  add_plan_note(hpz_plan_note, true);  // on the mesh: after the core's hybrid sharding line
}

}  // namespace zm
