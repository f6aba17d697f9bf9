#include "core/zero_mesh.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/registry.hpp"

namespace zm {

std::string shard_size_text(int64_t size) {
  if (size == kShardSizeNode) return "node";
  if (size == 0) return "all";
  return std::to_string(size);
}

// `world`: the data-parallel ranks; a node holds 1/(model-parallel size) of its ranks' worth of
// them.
int shard_group_ranks(const Deck& deck, const char* key, int64_t size, int world,
                      int ranks_per_node) {
  int64_t group = size == 0 ? world : size;
  if (size == kShardSizeNode) {
    const int64_t per_node =
        std::max<int64_t>(1, node_ranks(deck, ranks_per_node) / model_parallel_size(deck));
    group = std::min<int64_t>(per_node, world);
  }
  if (group < 1 || group > world || world % group != 0)
    fail(
        "{}: {} = {} ({} ranks per shard group): expected a divisor of the rank count {} (ranks "
        "are grouped consecutively, and every group holds a whole replica)",
        deck.where(key), key, shard_size_text(size), group, world);
  return static_cast<int>(group);
}

void add_mesh_configurer(MeshConfigurer configurer) {
  registry<MeshConfigurer>().push_back(std::move(configurer));
}

ZM_REGISTRY(ModelDimension, add_model_dimension, model_dimensions)

int64_t model_parallel_size(const Deck& deck) {
  int64_t size = 1;
  for (const ModelDimension& d : model_dimensions()) size *= deck.value<int64_t>(d.key);
  return size;
}

ModelPlacements ZeroMesh::placements(const StageSpec& spec) const {
  const Placement sharded = Placement::shard({kShardDim});
  ModelPlacements p;
  if (spec.gathers_parameters()) p.params = sharded;
  if (spec.shards_gradients()) p.grads = sharded;
  if (spec.shards_states()) p.optim = sharded_optimizer;
  return p;
}

ZeroMesh hybrid_mesh(int data_parallel, int group_ranks, bool optimizer_over_groups,
                     const std::vector<MeshDim>& model) {
  ZM_ASSERT(group_ranks >= 1 && data_parallel % group_ranks == 0, "{} ranks in groups of {}",
            data_parallel, group_ranks);
  std::vector<MeshDim> dims = {{kReplicateDim, data_parallel / group_ranks},
                               {kShardDim, group_ranks}};
  dims.insert(dims.end(), model.begin(), model.end());
  ZeroMesh m;
  m.mesh = DeviceMesh(std::move(dims));
  if (!model.empty()) m.slice_dim = m.mesh.ndims() - 1;
  if (optimizer_over_groups && m.hybrid())
    m.sharded_optimizer = Placement::shard({kShardDim, kReplicateDim});
  return m;
}

int64_t node_ranks(const Deck& deck, int64_t ranks_per_node) {
  return deck.zero.ranks_per_node > 0 ? deck.zero.ranks_per_node : ranks_per_node;
}

ZeroMesh zero_mesh(const Deck& deck, int stage, int ranks, int ranks_per_node) {
  std::vector<MeshDim> model;
  int64_t model_ranks = 1;
  for (const ModelDimension& d : model_dimensions()) {
    const int64_t size = deck.value<int64_t>(d.key);
    model_ranks *= size;
    if (ranks % model_ranks != 0)
      fail(
          "{}: {} = {}: expected a divisor of the rank count {} (each {} group is {} consecutive "
          "ranks)",
          deck.where(d.key), d.key, size, ranks, d.group, size);
    model.push_back({d.name, static_cast<int>(size)});
  }
  // The ZeRO dimensions count the ranks holding the same parts of the model.
  const int world = ranks / static_cast<int>(model_ranks);
  const StageSpec& spec = stage_spec(stage);
  std::optional<ShardGroups> groups;
  for (const MeshConfigurer& configurer : registry<MeshConfigurer>())
    if ((groups = configurer(deck, spec, world, ranks_per_node))) break;
  if (!groups) {  // zero.shard_size's groups, or one
    groups.emplace();
    groups->group_ranks = spec.shards_states() && deck.zero.shard_size != 0
                              ? shard_group_ranks(deck, "zero.shard_size", deck.zero.shard_size,
                                                  world, ranks_per_node)
                              : world;
  }
  ZeroMesh m = hybrid_mesh(world, groups->group_ranks, groups->optimizer_over_groups, model);
  m.description = groups->description;
  m.slice_dim = -1;  // the innermost model dimension that slices
  for (size_t d = 0; d < model_dimensions().size(); ++d)
    if (model_dimensions()[d].slices) m.slice_dim = kFirstModelDim + static_cast<int>(d);
  m.ranks_per_node = static_cast<int>(node_ranks(deck, ranks_per_node));
  return m;
}

std::string describe_zero_mesh(const ZeroMesh& mesh, const Deck& deck) {
  if (!mesh.hybrid()) return "";
  if (!mesh.description.empty()) return mesh.description;
  return "hybrid sharding: " + std::to_string(mesh.groups()) + " shard groups of " +
         std::to_string(mesh.group_ranks()) +
         " ranks (zero.shard_size = " + shard_size_text(deck.zero.shard_size) + ")";
}

std::vector<std::string> describe_model_dimensions(const ZeroMesh& mesh) {
  std::vector<std::string> lines;
  for (const ModelDimension& d : model_dimensions()) {
    if (!mesh.mesh.has(d.name) || mesh.mesh.size(d.name) == 1) continue;
    const int size = mesh.mesh.size(d.name);
    lines.push_back(d.title + ": " + std::to_string(mesh.world() / size) + " groups of " +
                    std::to_string(size) + " ranks (" + d.key + ")");
  }
  return lines;
}

}  // namespace zm
