// The device mesh of a ZeRO run (zero.shard_size, or a module's mesh configurer) and where each
// kind of model state lives on it: the arithmetic alone, shared by the run (which builds the
// communicators, comm/mesh_comms.hpp) and the planner.
//
// The ZeRO dimensions, outermost first: `replicate`, the shard groups, each holding a replica of
// the sharded model states, and `shard`, the consecutive ranks of one group, over which stages
// 1-3 partition every unit. Gradients are reduce-scattered along `shard`, then all-reduced along
// `replicate`; parameters are all-gathered along `shard`. One group (shard_size 0) is plain ZeRO;
// stage 0 shards nothing, so it always has one group. What a stage shards (core/stage_spec.hpp)
// is sharded along `shard`, except that a module's mesh configurer may shard the optimizer state
// along `shard` and then `replicate` (a secondary partition: one sub-shard per replica, so that it
// spans all ranks while the gathers stay within the group).
//
// Model parallelism adds dimensions (ModelDimension, each declared by a module), innermost, so
// that a model-parallel group is consecutive ranks (on one node). `shard` and `replicate` then
// group the ranks with equal model-parallel coordinates; no ZeRO placement shards over a model
// dimension, along which the ranks hold different slices of the model, or different parts of it
// (src/model/layout.hpp: ModelPart).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/deck.hpp"
#include "core/device_mesh.hpp"
#include "core/stage_spec.hpp"

namespace zm {

inline const std::string kReplicateDim = "replicate";  // outer: the shard groups
inline const std::string kShardDim = "shard";          // inner: the ranks within a group

// A dimension along which the model itself is split, declared by a module at start-up: innermost
// in the mesh, in the order added. Its size is the deck's integer key `key`; 1 leaves the model
// whole.
struct ModelDimension {
  std::string name;    // the mesh dimension's name
  std::string key;     // the deck key that sets its size ("section.key")
  std::string group;   // a group of ranks along it in messages: "each <group> group", "x 2 <group>"
  std::string title;   // what the parallelism is called in the run's log lines
  bool slices = true;  // the model is cut into slices along it; false: each coordinate a part
};
void add_model_dimension(ModelDimension dimension);
const std::vector<ModelDimension>& model_dimensions();
// The ranks of one model-parallel group: the product of the model dimensions' sizes (1: none).
int64_t model_parallel_size(const Deck& deck);

// The index of the first model dimension in a ZeroMesh's mesh (after replicate and shard).
constexpr int kFirstModelDim = 2;

// Where each kind of model state lives on the mesh.
struct ModelPlacements {
  Placement params, grads, optim;
};

struct ZeroMesh {
  DeviceMesh mesh;  // replicate x shard x the model dimensions
  // Where a stage that shards the optimizer state puts it: along shard, or shard and then
  // replicate (sub-shards).
  Placement sharded_optimizer = Placement::shard({kShardDim});
  int ranks_per_node = 0;   // consecutive world ranks sharing a node (node_ranks); 0: all on one
  std::string description;  // a mesh configurer's line for logs ("": the core's)

  int world() const { return mesh.world(); }  // every rank
  // The ranks of one (consecutive) model-parallel group, and the data-parallel ranks: those
  // holding the same parts of the model.
  int model_parallel() const { return world() / (groups() * group_ranks()); }
  int data_parallel() const { return world() / model_parallel(); }
  // A world rank's place among the data-parallel ranks, and the slice of the model it holds.
  int data_parallel_rank(int world_rank) const { return world_rank / model_parallel(); }
  int model_rank(int world_rank) const {
    return model_dim() < 0 ? 0 : mesh.coordinate(world_rank, model_dim());
  }
  // The dimension the model is cut into slices along (the innermost model dimension that slices),
  // or -1 without one; and the slices.
  int model_dim() const { return slice_dim; }
  int slices() const { return slice_dim < 0 ? 1 : mesh.dim(slice_dim).size; }
  int slice_dim = -1;
  int group_ranks() const { return mesh.size(kShardDim); }  // ranks per shard group
  int groups() const { return mesh.size(kReplicateDim); }
  bool hybrid() const { return groups() > 1; }
  // Whether the sharded optimizer state cuts each group shard again, into one piece per replica,
  // and into how many pieces (1 where not).
  bool sub_sharded() const { return sharded_optimizer.shards(kReplicateDim); }
  int sub_shards() const { return pieces(mesh, sharded_optimizer) / group_ranks(); }
  // The stage's model state on this mesh.
  ModelPlacements placements(const StageSpec& spec) const;
};

// `data_parallel` ranks times the model dimensions' sizes: the data-parallel ranks in groups of
// `group_ranks` consecutive ones; optimizer_over_groups (with more than one group) shards the
// optimizer state over both ZeRO dimensions.
ZeroMesh hybrid_mesh(int data_parallel, int group_ranks, bool optimizer_over_groups,
                     const std::vector<MeshDim>& model = {});

// A module's shard groups for a deck and stage over `data_parallel` ranks instead of
// zero.shard_size's, or nullopt (the first configurer that returns groups decides). Fails
// (zm::Error) naming its keys.
struct ShardGroups {
  int group_ranks = 0;
  bool optimizer_over_groups = false;  // the optimizer state along shard and replicate
  std::string description;             // the mesh's line for logs
};
using MeshConfigurer = std::function<std::optional<ShardGroups>(
    const Deck&, const StageSpec&, int data_parallel, int ranks_per_node)>;
void add_mesh_configurer(MeshConfigurer configurer);

// Ranks per group for the value of a shard-size key (0 = all, kShardSizeNode = a node) over
// `data_parallel` ranks; fails naming `key` when it does not divide them.
int shard_group_ranks(const Deck& deck, const char* key, int64_t size, int data_parallel,
                      int ranks_per_node);
// "all", "node" or the number, as a deck spells a shard size.
std::string shard_size_text(int64_t size);

// The mesh of `world` ranks at `stage` under the modules' mesh configurers, else zero.shard_size,
// with the deck's sizes of the model dimensions. `ranks_per_node` (zero.ranks_per_node wins) is
// what "node" means, capped at the world. Fails, naming the key, where a size does not divide the
// rank count.
ZeroMesh zero_mesh(const Deck& deck, int stage, int world, int ranks_per_node);

// The ranks "node" stands for: the deck's zero.ranks_per_node when set (to fake nodes), else
// `ranks_per_node` (MPI's shared-memory split in a run, the machine file's in the planner).
int64_t node_ranks(const Deck& deck, int64_t ranks_per_node);

// One line for logs: the groups and the key that made them ("" with one group).
std::string describe_zero_mesh(const ZeroMesh& mesh, const Deck& deck);
// One line for logs per model dimension of size above 1: its title, its groups and the key.
std::vector<std::string> describe_model_dimensions(const ZeroMesh& mesh);

}  // namespace zm
