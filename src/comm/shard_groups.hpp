// The communicators of hybrid sharding (core/shard_layout.hpp): the world, the shard group this
// rank belongs to, and the replicas (one rank of every group, holding the same shard). Without
// hybrid sharding the group is the world itself and there are no replicas, so that a run
// without zero.shard_size posts exactly what it always did, on one communicator.
//
// Accounting by network level: a collective is intra-group when its ranks are one shard group,
// inter-group when they span groups. With one group every collective is intra-group; with more,
// the group's collectives are intra-group, and those of the replicas and of the world (the step
// statistics, stage 0's all-reduce) inter-group.
#pragma once

#include <memory>
#include <vector>

#include "comm/communicator.hpp"
#include "core/shard_layout.hpp"

namespace zm {

enum class CommLevel : int { IntraGroup = 0, InterGroup, Count };
constexpr int kCommLevels = static_cast<int>(CommLevel::Count);
const char* comm_level_name(CommLevel level);  // "intra_group" | "inter_group"

// The layout of a run on `world` under the deck (collective: "node" asks MPI which ranks share
// a node unless zero.ranks_per_node says).
ShardLayout run_shard_layout(const Deck& deck, int stage, Communicator& world);

class ShardGroupComms {
 public:
  // Collective over `world` (it splits it when the layout is hybrid). The new communicators use
  // the world's backend.
  ShardGroupComms(Communicator& world, const ShardLayout& layout);
  ~ShardGroupComms();
  ShardGroupComms(const ShardGroupComms&) = delete;
  ShardGroupComms& operator=(const ShardGroupComms&) = delete;

  const ShardLayout& layout() const { return layout_; }
  Communicator& world() const { return *world_; }
  Communicator& group() const { return group_ ? *group_ : *world_; }
  Communicator* replicas() const { return replicas_.get(); }  // nullptr with one group

  // The distinct communicators, with the level of each.
  struct Member {
    Communicator* comm;
    CommLevel level;
  };
  const std::vector<Member>& members() const { return members_; }

  // Over every member: the watchdog's limit, progress, and a step's records (merged in the
  // order of posting and numbered again, so that ids stay unique on this rank).
  void set_timeout(double seconds);
  void progress();
  void begin_step_records();
  std::vector<CollectiveTimes> end_step_records();

  // The members' statistics summed, in total and for one level.
  CommStats stats() const;
  CommStats stats(CommLevel level) const;
  void reset_stats();

 private:
  ShardLayout layout_;
  Communicator* world_;
  MPI_Comm group_split_ = MPI_COMM_NULL, replica_split_ = MPI_COMM_NULL;
  std::unique_ptr<Communicator> group_, replicas_;
  std::vector<Member> members_;
};

}  // namespace zm
