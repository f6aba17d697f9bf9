#include "zero/schedule.hpp"

#include <algorithm>
#include <iterator>

#include "core/error.hpp"
#include "core/text.hpp"
#include "model/gpt.hpp"
#include "zero/engine.hpp"

namespace zm {

namespace {

// The gradient buckets of stage 0 as (lowest unit, highest unit), in the order backward completes
// them: units complete from the last (final norm) down to 0 (embeddings, whose wte gradient also
// collects the LM head's). A bucket is a run of consecutive units, closed when it reaches
// zero.bucket_mb; it is all-reduced when its lowest unit is ready.
std::vector<std::pair<int, int>> gradient_buckets(const Partition& partition,
                                                  const ZeroOptions& options) {
  const auto bucket_elements = static_cast<int64_t>(options.bucket_mb * 1024.0 * 1024.0 /
                                                    element_bytes(options.policy.reduce));
  std::vector<std::pair<int, int>> buckets;
  int hi = partition.num_units() - 1;
  int64_t filled = 0;
  for (int u = partition.num_units() - 1; u >= 0; --u) {
    filled += partition.unit(u).padded;
    if (filled >= bucket_elements || u == 0) {
      buckets.push_back({u, hi});
      hi = u - 1;
      filled = 0;
    }
  }
  return buckets;
}

// Builds one stage's schedule unit by unit; each method adds one role's collective of a unit.
class ScheduleBuilder {
 public:
  ScheduleBuilder(const StageSpec& spec, const ScheduleContext& context)
      : spec_(spec), c_(context), partition_(context.partition), options_(context.options) {
    for (const auto& provider : options_.strategies)
      for (auto& strategy : provider->strategies(context)) offered_.push_back(std::move(strategy));
    ZM_ASSERT(partition_.ranks() == c_.group_ranks,
              "partition over {} ranks, shard dimension of {}", partition_.ranks(), c_.group_ranks);
    // Each unit's acquisitions in a micro-step, and before backward's first (a forward-only pass).
    acquired_.assign(static_cast<size_t>(partition_.num_units()), {0, 0});
    bool backward = false;
    for (const UnitEvent& event : gpt_unit_order(partition_.layout())) {
      backward = backward || event.use == UnitUse::Backward;
      auto& [per_micro_step, per_forward_only] = acquired_[static_cast<size_t>(event.unit)];
      ++per_micro_step;
      if (!backward) ++per_forward_only;
    }
  }

  void buckets(std::vector<ScheduledCollective>& out) const {
    for (const auto& [lo, hi] : gradient_buckets(partition_, options_)) {
      const UnitPartition& first = partition_.unit(lo);
      const UnitPartition& last = partition_.unit(hi);
      const int64_t count = last.padded_offset + last.padded - first.padded_offset;
      // In the shard group, which at stage 0 is every rank holding the same slices.
      const ScheduleHop hop{{CommOp::AllReduce, count, c_.reduce_bytes, partition_.ranks()},
                            MeshGroup::Shard};
      add(out, plain_entry(ScheduleRole::Buckets, lo, hi, reduced_name(), count, hop, 1,
                           StepPoint::LastBackward, wait_or(StepPoint::FinishBackward)));
    }
  }

  void group_reduction(int u, std::vector<ScheduledCollective>& out) const {
    const UnitPartition& p = partition_.unit(u);
    // Stage 1 reduces the full gradients once, on the last micro-step; stages 2-3 every bucket as
    // backward completes it, every micro-step.
    const bool per_micro_step = spec_.shards_gradients();
    add(out,
        plain_entry(ScheduleRole::GroupReduction, u, u,
                    per_micro_step ? "grad_bucket" : reduced_name(), p.shard,
                    in_group(CommOp::ReduceScatter, p.padded, c_.reduce_bytes),
                    per_micro_step ? options_.grad_accum : 1,
                    per_micro_step ? StepPoint::Backward : StepPoint::LastBackward,
                    wait_or(per_micro_step ? StepPoint::BucketReuse : StepPoint::FinishBackward)));
  }

  // Hybrid sharding: the shard's group sum over the replicas, once it is complete; with
  // secondary shards, into this rank's sub-shard, in place.
  void replica_reduction(int u, std::vector<ScheduledCollective>& out) const {
    if (c_.replicas == 1) return;
    const UnitPartition& p = partition_.unit(u);
    const bool sub = c_.mesh.sub_sharded();
    add(out, plain_entry(
                 ScheduleRole::ReplicaReduction, u, u, reduced_name(), sub ? p.sub_shard : p.shard,
                 across(sub ? CommOp::ReduceScatter : CommOp::AllReduce, p.shard, c_.reduce_bytes),
                 1, StepPoint::GroupReduced, wait_or(StepPoint::FinishBackward)));
  }

  // Where parameters are held more widely than the optimizer updates them: stages 1-2 (full,
  // updated by shard) gather the updated shards in the group; with secondary shards (group shard,
  // updated by sub-shard) the updated sub-shards across the replicas.
  void update_gather(int u, std::vector<ScheduledCollective>& out) const {
    const bool sub = c_.mesh.sub_sharded();
    if (!spec_.shards_states() || (spec_.gathers_parameters() && !sub)) return;
    const UnitPartition& p = partition_.unit(u);
    add(out, plain_entry(ScheduleRole::UpdateGather, u, u, "params", sub ? p.sub_shard : p.shard,
                         sub ? across(CommOp::AllGather, p.shard, c_.param_bytes)
                             : in_group(CommOp::AllGather, p.padded, c_.param_bytes),
                         1, StepPoint::UnitUpdated, wait_or(StepPoint::OptimizerEnd)));
  }

  // The step's loss and gradient sum of squares over every rank, one small all-reduce after
  // backward (every stage sums the squares of the gradients each rank owns, so that the norm is
  // computed the same way whatever the stage).
  void step_statistics(std::vector<ScheduledCollective>& out) const {
    const int64_t count = step_stats_count(partition_.layout());
    const ScheduleHop hop{{CommOp::AllReduce, count, 4, c_.mesh.world(), world_level(c_.mesh)},
                          MeshGroup::World};
    add(out, plain_entry(ScheduleRole::StepStatistics, -1, -1, "step_stats", count, hop, 1,
                         StepPoint::Statistics, StepPoint::Posted));
  }

  // The model's own collectives over its model-parallel group, blocking, as the model posts them
  // (not offered to the strategies: they are the scheme's).
  void model_syncs(std::vector<ScheduledCollective>& out) const {
    for (const ModelSyncPost& post : options_.model_posts) {
      const ModelCollective& w = post.wire;
      const int ranks = c_.mesh.slices();
      const ScheduleHop hop{{w.op, w.count, w.element_bytes, ranks, CommLevel::ModelParallel},
                            MeshGroup::Model};
      out.push_back(plain_entry(ScheduleRole::ModelSync, -1, -1, model_sync_name(post.point),
                                w.op == CommOp::AllReduce ? w.count : w.count / ranks, hop,
                                post.per_micro_batch * options_.grad_accum, StepPoint::ModelSync,
                                StepPoint::Posted, post.per_forward_only));
    }
  }

  // Stage 3: each time the model acquires the unit (gpt_unit_order): before its forward and again
  // before its backward, every micro-step (the embedding unit's second gather serves the LM
  // head's forward and backward; a tiled block's recomputed forward has its own). A forward-only
  // micro-batch gathers each unit for its forward, and the embedding unit again for the head.
  void unit_gather(int u, std::vector<ScheduledCollective>& out) const {
    if (!spec_.gathers_parameters()) return;
    const UnitPartition& p = partition_.unit(u);
    const auto [per_micro_step, per_forward_only] = acquired_[static_cast<size_t>(u)];
    add(out, plain_entry(ScheduleRole::UnitGather, u, u, "gathered", p.shard,
                         in_group(CommOp::AllGather, p.padded, c_.param_bytes),
                         per_micro_step * options_.grad_accum, StepPoint::Prefetch,
                         StepPoint::Acquire, per_forward_only));
  }

 private:
  // An entry of one hop, moved by the plain collective of the hop's op.
  static ScheduledCollective plain_entry(ScheduleRole role, int unit, int last_unit,
                                         const char* buffer, int64_t elements,
                                         const ScheduleHop& hop, int64_t per_step, StepPoint posted,
                                         StepPoint waited, int64_t per_forward_only = 0) {
    auto strategy = plain_collective(hop.wire.op);
    return {role,  strategy, unit,   last_unit, buffer,          elements,
            {hop}, per_step, posted, waited,    per_forward_only};
  }
  ScheduleHop in_group(CommOp op, int64_t count, int element_bytes) const {
    return {{op, count, element_bytes, c_.group_ranks, c_.in_group}, MeshGroup::Shard};
  }
  ScheduleHop across(CommOp op, int64_t count, int element_bytes) const {
    return {{op, count, element_bytes, c_.replicas, c_.across}, MeshGroup::Replicate};
  }
  // Adds the core's entry, or what the first of the run's other strategies that takes it makes
  // of it.
  void add(std::vector<ScheduledCollective>& out, ScheduledCollective entry) const {
    for (const std::shared_ptr<CollectiveStrategy>& strategy : offered_) {
      if (!strategy->takes(entry, c_)) continue;
      entry.strategy = strategy;
      strategy->describe(entry, c_);
      break;
    }
    out.push_back(std::move(entry));
  }
  StepPoint wait_or(StepPoint overlapped) const {
    return options_.overlap ? overlapped : StepPoint::Posted;
  }
  // The gradients the collectives reduce: the fp32 sum under the fp32 reduction.
  const char* reduced_name() const {
    return options_.policy.widens_reduce() ? "grad_sum" : "grads";
  }

  const StageSpec& spec_;
  const ScheduleContext& c_;
  const Partition& partition_;
  const ZeroOptions& options_;
  std::vector<std::shared_ptr<CollectiveStrategy>> offered_;  // this schedule's, from the options
  std::vector<std::pair<int64_t, int64_t>> acquired_;  // per unit: per micro-step, forward-only
};

}  // namespace

int unit_gather_slots(const ZeroOptions& options) {
  return 2 + static_cast<int>(options.overlap ? options.prefetch : 0);
}

ScheduleContext schedule_context(const StageSpec& spec, const Partition& partition,
                                 const ZeroOptions& options, const ZeroMesh& mesh) {
  return {partition, mesh, options, mesh.group_ranks(), mesh.groups(),
          // The levels along shard and replicate.
          level_along(mesh, kShardDim), level_along(mesh, kReplicateDim),
          element_bytes(options.policy.reduce), element_bytes(options.policy.param),
          spec.gathers_parameters() ? unit_gather_slots(options) : 0};
}

StepSchedule build_step_schedule(const StageSpec& spec, const Partition& partition,
                                 const ZeroOptions& options, const ZeroMesh& mesh) {
  const ScheduleContext context = schedule_context(spec, partition, options, mesh);
  const ScheduleBuilder build(spec, context);
  StepSchedule schedule;
  auto& out = schedule.collectives_;
  if (spec.gradients == GradientPath::AllReduce) {
    build.buckets(out);
  } else {
    for (int u = 0; u < partition.num_units(); ++u) {
      build.group_reduction(u, out);
      build.replica_reduction(u, out);
      build.update_gather(u, out);
      build.unit_gather(u, out);
    }
  }
  build.model_syncs(out);
  build.step_statistics(out);
  for (CollectiveStrategy* strategy : schedule.strategies())
    for (const BufferSpec& buffer : strategy->buffers(context))
      schedule.strategy_buffers_.push_back(buffer);
  return schedule;
}

std::vector<CollectiveStrategy*> StepSchedule::strategies() const {
  std::vector<CollectiveStrategy*> out;
  for (const ScheduledCollective& c : collectives_)
    if (std::find(out.begin(), out.end(), c.strategy.get()) == out.end())
      out.push_back(c.strategy.get());
  return out;
}

const ScheduledCollective* StepSchedule::find(int unit, ScheduleRole role) const {
  for (const ScheduledCollective& c : collectives_)
    if (c.role == role && c.unit == unit) return &c;
  return nullptr;
}

const ScheduledCollective& StepSchedule::of(int unit, ScheduleRole role) const {
  const ScheduledCollective* found = find(unit, role);
  ZM_ASSERT(found != nullptr, "unit {} has no {} in the step's schedule", unit,
            schedule_role_name(role));
  return *found;
}

PlannedCollectives StepSchedule::planned() const {
  PlannedCollectives out;
  for (const ScheduledCollective& c : collectives_)
    for (int64_t post = 0; post < c.per_step; ++post)
      for (const ScheduleHop& hop : c.hops) out.push_back(hop.wire);
  return out;
}

DType wire_dtype(const PlannedCollective& c) {
  switch (c.element_bytes) {
    case 1:
      return DType::U8;
    case 2:
      return DType::BF16;
    default:
      ZM_ASSERT(c.element_bytes == 4, "a collective of {}-byte elements", c.element_bytes);
      return DType::F32;
  }
}

const char* schedule_role_name(ScheduleRole role) {
  static const char* const kNames[] = {"buckets",        "group_reduction", "replica_reduction",
                                       "update_gather",  "unit_gather",     "model_sync",
                                       "step_statistics"};
  static_assert(std::size(kNames) == static_cast<size_t>(ScheduleRole::StepStatistics) + 1);
  return enum_name(kNames, role);
}

const char* mesh_group_name(MeshGroup group) {
  static const char* const kNames[] = {"shard", "replicate", "world", "model", "added"};
  static_assert(std::size(kNames) == static_cast<size_t>(MeshGroup::Added) + 1);
  return enum_name(kNames, group);
}

const char* step_point_name(StepPoint point) {
  static const char* const kNames[] = {"at_post",       "backward",      "last_backward",
                                       "group_reduced", "bucket_reuse",  "finish_backward",
                                       "unit_updated",  "optimizer_end", "prefetch",
                                       "acquire",       "statistics",    "model_sync"};
  static_assert(std::size(kNames) == static_cast<size_t>(StepPoint::ModelSync) + 1);
  return enum_name(kNames, point);
}

}  // namespace zm
