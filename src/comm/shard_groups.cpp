#include "comm/shard_groups.hpp"

#include <algorithm>

#include "comm/node_split.hpp"
#include "core/error.hpp"
#include "core/stage_spec.hpp"

namespace zm {

const char* comm_level_name(CommLevel level) {
  return level == CommLevel::IntraGroup ? "intra_group" : "inter_group";
}

ShardLayout run_shard_layout(const Deck& deck, int stage, Communicator& world) {
  int ranks_per_node = world.size();
  const StageSpec& spec = stage_spec(stage);
  const bool node = (spec.shards_states() && deck.zero.shard_size == kShardSizeNode) ||
                    (spec.gathers_parameters() && deck.zero.secondary_shard_size == kShardSizeNode);
  if (node && deck.zero.ranks_per_node == 0) ranks_per_node = NodeComm(world.mpi_comm()).size();
  return shard_layout(deck, stage, world.size(), ranks_per_node);
}

ShardGroupComms::ShardGroupComms(Communicator& world, const ShardLayout& layout)
    : layout_(layout), world_(&world) {
  ZM_ASSERT(layout.world == world.size(), "shard layout of {} ranks, communicator of {}",
            layout.world, world.size());
  if (!layout.hybrid()) {
    members_.push_back({world_, CommLevel::IntraGroup});
    return;
  }
  // Keyed by the world rank, so that group ranks and replica ranks keep the world's order: the
  // group rank is the shard index, the replica rank the group index.
  const int rank = world.rank();
  MPI_Comm_split(world.mpi_comm(), layout.group_of(rank), rank, &group_split_);
  MPI_Comm_split(world.mpi_comm(), layout.shard_of(rank), rank, &replica_split_);
  group_ = make_communicator(world.name(), group_split_, world.watchdog());
  replicas_ = make_communicator(world.name(), replica_split_, world.watchdog());
  members_.push_back({group_.get(), CommLevel::IntraGroup});
  members_.push_back({replicas_.get(), CommLevel::InterGroup});
  members_.push_back({world_, CommLevel::InterGroup});
}

ShardGroupComms::~ShardGroupComms() {
  group_.reset();
  replicas_.reset();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (group_split_ != MPI_COMM_NULL) MPI_Comm_free(&group_split_);
  if (replica_split_ != MPI_COMM_NULL) MPI_Comm_free(&replica_split_);
}

void ShardGroupComms::set_timeout(double seconds) {
  for (const Member& m : members_) m.comm->set_timeout(seconds);
}

void ShardGroupComms::progress() {
  for (const Member& m : members_) m.comm->progress();
}

void ShardGroupComms::begin_step_records() {
  for (const Member& m : members_) m.comm->begin_step_records();
}

std::vector<CollectiveTimes> ShardGroupComms::end_step_records() {
  std::vector<CollectiveTimes> all;
  for (const Member& m : members_)
    for (CollectiveTimes& c : m.comm->end_step_records()) {
      c.inter_group = m.level == CommLevel::InterGroup;
      all.push_back(c);
    }
  if (members_.size() > 1) {
    std::stable_sort(
        all.begin(), all.end(),
        [](const CollectiveTimes& a, const CollectiveTimes& b) { return a.posted < b.posted; });
    for (size_t i = 0; i < all.size(); ++i) all[i].id = static_cast<int64_t>(i);
  }
  return all;
}

namespace {
void add_into(CommStats& total, const CommStats& part) {
  for (int op = 0; op < kCommOps; ++op) {
    total.ops[op].calls += part.ops[op].calls;
    total.ops[op].bytes += part.ops[op].bytes;
    total.ops[op].seconds += part.ops[op].seconds;
  }
}
}  // namespace

CommStats ShardGroupComms::stats() const {
  CommStats total;
  for (const Member& m : members_) add_into(total, m.comm->stats());
  return total;
}

CommStats ShardGroupComms::stats(CommLevel level) const {
  CommStats total;
  for (const Member& m : members_)
    if (m.level == level) add_into(total, m.comm->stats());
  return total;
}

void ShardGroupComms::reset_stats() {
  for (const Member& m : members_) m.comm->reset_stats();
}

}  // namespace zm
