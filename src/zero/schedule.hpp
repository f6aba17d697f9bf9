// One optimizer step's collectives, as data: which collectives each unit's model state goes
// through, in what format, over which group of the mesh, and where in the step each is posted
// and waited. build_step_schedule is the one description of a step's traffic: the engine
// executes it (zero/schedule_execution.hpp: every collective a path posts is an entry of it, its
// counts, types and communicator taken from the entry) and the planner prices it
// (StepSchedule::planned), so that planned == measured holds by construction.
//
// It is built once from what decides the traffic: the stage's record (core/stage_spec.hpp), the
// mesh with its placements (core/zero_mesh.hpp: hybrid sharding, the secondary shards), the
// precision policy (the reduce and parameter types) and the strategies the run's options offer
// (zero/collective_strategy.hpp). Each collective's strategy is chosen there, once; the paths do
// not branch on the settings again. Beside the posts of a training step, each entry says how often
// one forward-only micro-batch posts it (a pass between steps that reads the parameters as a
// training forward does and changes nothing: ZeroEngine::begin_forward_only), so that such a
// pass is priced from the same entries (ScheduledCollective::per_forward_only). The core's
// entries:
//
//   role               strategy                                     group      posted
//   Buckets            all-reduce                                   shard      last backward
//   GroupReduction     reduce-scatter                               shard      (last) backward
//   ReplicaReduction   all-reduce | reduce-scatter (secondary)     replicate  group sum done
//   UpdateGather       all-gather                                   shard or   unit updated
//                                                                   replicate
//   UnitGather         all-gather                                   shard      prefetch
//   ModelSync          the model's (model/gpt.hpp: gpt_sync_posts)  model      model_sync
//   StepStatistics     all-reduce                                   world      statistics
//
// The model posts its own entries (ModelParallelScheme, through post_model_collective, which
// checks each against the model's declaration); the engine posts the others.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/mesh_comms.hpp"
#include "core/stage_spec.hpp"
#include "core/zero_mesh.hpp"
#include "zero/collective_strategy.hpp"
#include "zero/partition.hpp"
#include "zero/zero_options.hpp"

namespace zm {

// One collective as the planner prices it and the run's accounting counts it.
struct PlannedCollective {
  CommOp op;
  int64_t count;      // elements of the whole buffer (N pieces for reduce-scatter/all-gather)
  int element_bytes;  // of the type moved (1: bytes, a packed quantized format)
  int ranks;          // of the communicator it runs on
  CommLevel level = CommLevel::IntraGroup;
  // Device memory read and written by the passes around it on this rank: a compressed
  // collective's quantization before and dequantization after (0: none).
  int64_t pass_bytes = 0;
  // The nodes its communicator spans where it is not a mesh dimension's or the world's (an
  // exchange in hops by node); else the planner takes the dimension's.
  std::optional<NodeSpan> span = std::nullopt;
};
using PlannedCollectives = std::vector<PlannedCollective>;

// What a collective does for the step.
enum class ScheduleRole {
  Buckets,           // stage 0: consecutive units' full gradients summed over the group
  GroupReduction,    // a unit's gradients summed over the shard group into each rank's shard
  ReplicaReduction,  // a shard's group sum summed over its replicas (hybrid sharding)
  UpdateGather,      // the updated pieces of a unit brought to every rank holding it more widely
  UnitGather,        // a unit's shards gathered for its forward or backward (stage 3)
  ModelSync,         // the model's own, where forward or backward combine its slices
  StepStatistics,    // the step's loss and gradient sum of squares summed over every rank
};
// The step's statistics in fp32 (StepStatistics): the loss sum, then the gradients' sum of
// squares per dataset of the whole model, so that every layout sums the norm in one order.
inline int64_t step_stats_count(const ParamLayout& layout) {
  return 1 + layout.num_datasets();
}
// The communicator it runs on (comm/mesh_comms.hpp).
enum class MeshGroup {
  Shard,      // the shard group (the `shard` dimension)
  Replicate,  // one rank per group holding the same shard
  World,      // every rank
  Model,      // the model-parallel group (along the mesh's model dimension)
  Added,      // one a module added (MeshComms::add_split), named by the hop
};
// Points of the step.
enum class StepPoint {
  Posted,          // waited where it is posted (no overlap, or a blocking strategy)
  Backward,        // as backward completes the unit, every micro-step
  LastBackward,    // as backward completes the unit, on the last micro-step
  GroupReduced,    // once the unit's shard holds its group's sum (last micro-step)
  BucketReuse,     // before its gradient bucket takes another unit
  FinishBackward,  // after the last backward (ZeroEngine::finish_backward)
  UnitUpdated,     // after the optimizer updated the unit
  OptimizerEnd,    // after the optimizer's last unit
  Prefetch,        // zero.prefetch uses ahead of the unit's forward and backward
  Acquire,         // when the model acquires the unit
  Statistics,      // after backward, before the optimizer: the step's loss and gradient norm
  ModelSync,       // where forward or backward reach the model's sync point
};

struct ScheduleHop {
  PlannedCollective wire;
  MeshGroup group;
  std::string added = "";  // MeshGroup::Added: the communicator's name
};

struct ScheduledCollective {
  ScheduleRole role;
  std::shared_ptr<CollectiveStrategy> strategy;  // how it moves the data (posts it)
  int unit;            // the unit it moves (Buckets: the lowest; -1: none, StepStatistics)
  int last_unit;       // Buckets: the highest unit, else unit
  const char* buffer;  // what it moves, as the engine names the buffer
  // Elements of the piece each rank contributes (all-gathers), keeps (reduce-scatters, an
  // exchange's sum) or sums in place (all-reduces).
  int64_t elements;
  std::vector<ScheduleHop> hops;  // in order: one, or several for an exchange in hops
  int64_t per_step;               // posts in one optimizer step
  StepPoint posted, waited;
  // Posts in one forward-only micro-batch (the entries a forward reaches; 0: none).
  int64_t per_forward_only = 0;
  bool blocking() const { return waited == StepPoint::Posted; }
  // Whether it brings parameters (in their type) rather than summing gradients (the reduce type).
  bool gathers() const {
    return role == ScheduleRole::UpdateGather || role == ScheduleRole::UnitGather;
  }
};

class StepSchedule {
 public:
  // Every collective, in the order a step posts them unit by unit (Buckets first).
  const std::vector<ScheduledCollective>& collectives() const { return collectives_; }
  // Unit u's collective of `role`; nullptr where the step has none.
  const ScheduledCollective* find(int unit, ScheduleRole role) const;
  // The same, asserting it exists (the path posting it relies on it).
  const ScheduledCollective& of(int unit, ScheduleRole role) const;
  // The strategies its entries use, each once, in the order of their first entry.
  std::vector<CollectiveStrategy*> strategies() const;
  // The buffers those strategies keep (CollectiveStrategy::buffers), for the planner and the
  // engine, which allocates them.
  const std::vector<BufferSpec>& strategy_buffers() const { return strategy_buffers_; }
  // The collectives one step posts, each hop and post once, for the planner.
  PlannedCollectives planned() const;

 private:
  friend StepSchedule build_step_schedule(const StageSpec&, const Partition&, const ZeroOptions&,
                                          const ZeroMesh&);
  std::vector<ScheduledCollective> collectives_;
  std::vector<BufferSpec> strategy_buffers_;
};

// What the schedule's builder and its strategies know of a run (collective_strategy.hpp).
ScheduleContext schedule_context(const StageSpec& spec, const Partition& partition,
                                 const ZeroOptions& options, const ZeroMesh& mesh);
// The parameter slots of stage 3's gathering path: the embedding unit's, and 1 + the prefetch
// for the others (each holds a unit between its gather and its release).
int unit_gather_slots(const ZeroOptions& options);

// The schedule of `spec` over `partition` (over the ranks of the mesh's shard dimension) on
// `mesh`, under the options' precision, strategies and state tier.
StepSchedule build_step_schedule(const StageSpec& spec, const Partition& partition,
                                 const ZeroOptions& options, const ZeroMesh& mesh);

// The type a collective's elements move in: bytes, bf16 or fp32 by their size.
DType wire_dtype(const PlannedCollective& c);

// Names, for the schedule's listing (`zeromini plan --schedule`).
const char* schedule_role_name(ScheduleRole role);
const char* mesh_group_name(MeshGroup group);
const char* step_point_name(StepPoint point);

}  // namespace zm
