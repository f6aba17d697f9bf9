// The communicators of a ZeRO mesh (core/zero_mesh.hpp): one per mesh dimension, over the ranks
// that share every other coordinate, and the world. With one shard group a dimension spanning
// the world is the world itself and any other of one rank has none: `shard` is the world and
// `replicate` has none, so that a run without zero.shard_size posts exactly what it always did,
// on one communicator. With more groups every dimension is split off the world (a group of one
// rank still has its own). A model dimension (core/zero_mesh.hpp) has its own communicator
// whenever its size is above 1, even when it spans the world.
//
// Accounting by network level: a collective is intra-group when its ranks are one shard group,
// inter-group when they span groups. A dimension's communicator is inter-group when it runs
// along `replicate`; the world's when there is more than one group (the step statistics,
// stage 0's all-reduce). Across the levels, the bytes that leave nodes are counted apart
// (cross_node_stats, comm/cross_node.hpp).
//
// Under split_group_by_node a shard group that spans nodes (hops_by_node) is also split in
// two ways, once: its ranks on this rank's node, and its ranks of this rank's local index on every
// node (one per node), the two hops of zero/quantized_gradients.hpp. Both are intra-group. A
// node is ranks_per_node consecutive world ranks, and the group's ranks keep the world's order,
// so group rank r sits on the group's node r / k with local index r % k.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "core/zero_mesh.hpp"

namespace zm {

// ModelParallel: the collectives along the model dimensions (the model's, not ZeRO's).
enum class CommLevel : int { IntraGroup = 0, InterGroup, ModelParallel, Count };
constexpr int kCommLevels = static_cast<int>(CommLevel::Count);
const char* comm_level_name(CommLevel level);  // "intra_group" | "inter_group" | "model_parallel"

// The level of the collectives along a dimension of the mesh, and of the world's.
CommLevel level_along(const ZeroMesh& mesh, const std::string& dim);
CommLevel world_level(const ZeroMesh& mesh);

class MeshComms {
 public:
  // Collective over `world` (it splits it along each dimension of a hybrid mesh, and the shard
  // group by node under split_group_by_node). The new communicators use the world's backend.
  MeshComms(Communicator& world, const ZeroMesh& mesh, bool split_group_by_node = false);
  ~MeshComms();
  MeshComms(const MeshComms&) = delete;
  MeshComms& operator=(const MeshComms&) = delete;

  const ZeroMesh& mesh() const { return mesh_; }
  Communicator& world() const { return *world_; }
  // The communicator along a dimension; nullptr where it has none (replicate with one group).
  Communicator* along(const std::string& dim) const;
  // The shard group's (the world's with one group), and the replicas' (one rank of every group,
  // holding the same shard; nullptr with one group).
  Communicator& group() const { return *along(kShardDim); }
  Communicator* replicas() const { return along(kReplicateDim); }
  // The model-parallel group's: along the innermost model dimension (nullptr without one, or at
  // size 1).
  Communicator* model_parallel() const {
    return mesh_.model_dim() < 0 ? nullptr : along_[static_cast<size_t>(mesh_.model_dim())];
  }
  // The shard group's ranks on this rank's node, and its ranks of this rank's local index on every
  // node (ranked by node); nullptr unless the group was split by node.
  Communicator* group_within_node() const { return group_within_node_; }
  Communicator* group_across_nodes() const { return group_across_nodes_; }

  // The distinct communicators, with the level of each: the dimensions' from the innermost out,
  // then the world, then the group's splits by node.
  struct Member {
    Communicator* comm;
    CommLevel level;
  };
  const std::vector<Member>& members() const { return members_; }

  // Over every member: the watchdog's limit, progress.
  void set_timeout(double seconds);
  void progress();

  // The members' statistics summed, in total and for one level.
  CommStats stats() const;
  CommStats stats(CommLevel level) const;
  // The bytes that left this rank's node (comm/cross_node.hpp), over every level: the nodes are
  // the mesh's ranks_per_node consecutive world ranks.
  CommStats cross_node_stats() const;
  void reset_stats();

 private:
  // The communicator along dimension d: the world's, a split of it, or none.
  Communicator* make_along(int d);
  // Collective over `comm`: sets the nodes its ranks span.
  void count_nodes(Communicator& comm) const;
  // Collective over `parent`: a communicator of the ranks of equal `color`, ranked by `key`.
  Communicator* split(Communicator& parent, int color, int key);
  // Collective over the group: its two splits by node, where hops_by_node says so.
  void split_group_by_node();

  ZeroMesh mesh_;
  Communicator* world_;
  std::vector<Communicator*> along_;  // per mesh dimension
  std::vector<MPI_Comm> splits_;
  std::vector<std::unique_ptr<Communicator>> owned_;  // the splits' communicators
  std::vector<Member> members_;
  Communicator* group_within_node_ = nullptr;
  Communicator* group_across_nodes_ = nullptr;
};

}  // namespace zm
