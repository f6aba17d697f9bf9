// The communicators of a ZeRO mesh (core/zero_mesh.hpp): one per mesh dimension, over the ranks
// that share every other coordinate, and the world. With one shard group `shard` is the world and
// `replicate` has none, so that a run without zero.shard_size posts on one communicator; with
// more, every dimension is split off the world. A model dimension has its own communicator
// whenever its size is above 1. Collectives are counted by network level: inter-group along
// `replicate`, and the world's with more than one group; intra-group otherwise. A module may add
// communicators (add_split, from StrategyProvider::prepare) under a name its hops use.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "core/zero_mesh.hpp"

namespace zm {

enum class CommLevel : int { IntraGroup = 0, InterGroup, ModelParallel, Count };
constexpr int kCommLevels = static_cast<int>(CommLevel::Count);

// The level of the collectives along a dimension of the mesh, and of the world's.
CommLevel level_along(const ZeroMesh& mesh, const std::string& dim);
CommLevel world_level(const ZeroMesh& mesh);

class MeshComms {
 public:
  // Collective over `world`; the new communicators use its backend.
  MeshComms(Communicator& world, const ZeroMesh& mesh);
  ~MeshComms();
  MeshComms(const MeshComms&) = delete;
  MeshComms& operator=(const MeshComms&) = delete;

  const ZeroMesh& mesh() const { return mesh_; }
  Communicator& world() const { return *world_; }
  // The communicator along a dimension; nullptr where it has none (replicate with one group).
  Communicator* along(const std::string& dim) const {
    return along_[static_cast<size_t>(mesh_.mesh.index_of(dim))];
  }
  // The shard group's, and the replicas' (one rank of every group; nullptr with one group).
  Communicator& group() const { return *along(kShardDim); }
  Communicator* replicas() const { return along(kReplicateDim); }
  // Along the innermost model dimension (nullptr without one, or at size 1).
  Communicator* model_parallel() const {
    return mesh_.model_dim() < 0 ? nullptr : along_[static_cast<size_t>(mesh_.model_dim())];
  }
  // Collective over `parent`: a member `name` of its ranks of this rank's `color`, ranked by
  // `key`, counted at `level`.
  Communicator& add_split(const std::string& name, Communicator& parent, int color, int key,
                          CommLevel level);
  Communicator* added(const std::string& name) const;  // the member `name`, or nullptr

  // The distinct communicators: the dimensions' from the innermost out, the world, those added.
  struct Member {
    Communicator* comm;
    CommLevel level;
    std::string name = "";
  };
  const std::vector<Member>& members() const { return members_; }

  void set_timeout(double seconds);
  void progress() {
    for (const Member& m : members_) m.comm->progress();
  }

  CommStats stats() const;
  CommStats stats(CommLevel level) const;

 private:
  Communicator* make_along(int d);  // the world, a split of it, or none
  Communicator* split(Communicator& parent, int color, int key);

  ZeroMesh mesh_;
  Communicator* world_;
  std::vector<Communicator*> along_;  // per mesh dimension
  std::vector<MPI_Comm> splits_;
  std::vector<std::unique_ptr<Communicator>> owned_;  // the splits' communicators
  std::vector<Member> members_;
};

}  // namespace zm
