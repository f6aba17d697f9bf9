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
// stage 0's all-reduce).
//
// A module's collectives may need more communicators (e.g. splits of the shard group): it adds
// them (add_split, from StrategyProvider::prepare), under a name the schedule's hops use.
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
  // Collective over `world` (it splits it along each dimension of a hybrid mesh). The new
  // communicators use the world's backend.
  MeshComms(Communicator& world, const ZeroMesh& mesh);
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
  // Collective over `parent` (a member): a member named `name`, of the ranks of `parent` with
  // this rank's `color`, ranked by `key`, whose collectives count at `level`.
  Communicator& add_split(const std::string& name, Communicator& parent, int color, int key,
                          CommLevel level);
  // The member added under `name`, or nullptr.
  Communicator* added(const std::string& name) const;

  // The distinct communicators, with the level of each: the dimensions' from the innermost out,
  // then the world, then those added (named).
  struct Member {
    Communicator* comm;
    CommLevel level;
    std::string name = "";
  };
  const std::vector<Member>& members() const { return members_; }

  // Over every member: the watchdog's limit, progress.
  void set_timeout(double seconds);
  void progress();

  // The members' statistics summed, in total and for one level.
  CommStats stats() const;
  CommStats stats(CommLevel level) const;
  void reset_stats();

 private:
  // The communicator along dimension d: the world's, a split of it, or none.
  Communicator* make_along(int d);
  // Collective over `parent`: a communicator of the ranks of equal `color`, ranked by `key`.
  Communicator* split(Communicator& parent, int color, int key);

  ZeroMesh mesh_;
  Communicator* world_;
  std::vector<Communicator*> along_;  // per mesh dimension
  std::vector<MPI_Comm> splits_;
  std::vector<std::unique_ptr<Communicator>> owned_;  // the splits' communicators
  std::vector<Member> members_;
};

}  // namespace zm
