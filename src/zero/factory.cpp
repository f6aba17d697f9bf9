// A stage number onto a stage: the typed engine for the trainer, the buffer and traffic lists
// (untyped, priced by the deck's precision) for the planner.
#include "core/error.hpp"
#include "zero/stages.hpp"

namespace zm {

namespace {
[[noreturn]] void bad_stage(int stage) {
  fail("zero.stage = {}: expected an integer in 0..3", stage);
}
}  // namespace

template <typename Real>
std::unique_ptr<ZeroEngineT<Real>> make_engine(int stage, const PartitionPlan& plan,
                                               MeshComms& comms, const Deck& deck,
                                               const std::vector<UnitEvent>& schedule,
                                               MemoryLedger* ledger) {
  switch (stage) {
    case 0:
      return std::make_unique<Stage0<Real>>(plan, comms, deck, ledger);
    case 1:
      return std::make_unique<Stage1<Real>>(plan, comms, deck, ledger);
    case 2:
      return std::make_unique<Stage2<Real>>(plan, comms, deck, ledger);
    case 3:
      return std::make_unique<Stage3<Real>>(plan, comms, deck, schedule, ledger);
    default:
      bad_stage(stage);
  }
}

template std::unique_ptr<ZeroEngineT<float>> make_engine(int, const PartitionPlan&, MeshComms&,
                                                         const Deck&, const std::vector<UnitEvent>&,
                                                         MemoryLedger*);
#if ZEROMINI_HAVE_BF16
template std::unique_ptr<ZeroEngineT<bf16>> make_engine(int, const PartitionPlan&, MeshComms&,
                                                        const Deck&, const std::vector<UnitEvent>&,
                                                        MemoryLedger*);
#endif

std::vector<BufferSpec> ZeroEngine::buffer_plan(int stage, const PartitionPlan& plan,
                                                const Deck& deck, const ZeroMesh& mesh) {
  switch (stage) {
    case 0:
      return stage0_buffers(plan, deck, mesh);
    case 1:
      return stage1_buffers(plan, deck, mesh);
    case 2:
      return stage2_buffers(plan, deck, mesh);
    case 3:
      return stage3_buffers(plan, deck, mesh);
    default:
      bad_stage(stage);
  }
}

PlannedCollectives per_unit_traffic(const PartitionPlan& plan, const Deck& deck,
                                    const ZeroMesh& mesh, int64_t reductions, int64_t gathers) {
  PlannedCollectives out;
  const int reduced = reduce_element_bytes(deck), gathered = param_element_bytes(deck);
  // Along shard: the unit's reductions and gathers; along replicate: its shard's, where the
  // mesh has replicas (the communicators of comm/mesh_comms.hpp, with their levels).
  const int group = mesh.mesh.size(kShardDim), replicas = mesh.mesh.size(kReplicateDim);
  const CommLevel in_group = level_along(mesh, kShardDim);
  const CommLevel across = level_along(mesh, kReplicateDim);
  ZM_ASSERT(plan.ranks() == group, "plan over {} ranks, shard dimension of {}", plan.ranks(),
            group);
  for (int u = 0; u < plan.num_units(); ++u) {
    const int64_t padded = plan.unit(u).padded;
    for (int64_t i = 0; i < reductions; ++i)
      out.push_back({CommOp::ReduceScatter, padded, reduced, group, in_group});
    const int64_t shard = plan.unit(u).shard;
    if (mesh.sharded_optimizer.shards(kReplicateDim)) {
      // hpZ: the shard reduce-scattered into sub-shards, and gathered back
      out.push_back({CommOp::ReduceScatter, shard, reduced, replicas, across});
      out.push_back({CommOp::AllGather, shard, gathered, replicas, across});
    } else if (replicas > 1) {  // the shard's replicas all-reduce it
      out.push_back({CommOp::AllReduce, shard, reduced, replicas, across});
    }
    for (int64_t i = 0; i < gathers; ++i)
      out.push_back({CommOp::AllGather, padded, gathered, group, in_group});
  }
  return out;
}

std::vector<ZeroEngine::PlannedCollective> ZeroEngine::traffic_plan(int stage,
                                                                    const PartitionPlan& plan,
                                                                    const Deck& deck,
                                                                    const ZeroMesh& mesh) {
  switch (stage) {
    case 0:
      return stage0_traffic(plan, deck);
    case 1:
      return stage1_traffic(plan, deck, mesh);
    case 2:
      return stage2_traffic(plan, deck, mesh);
    case 3:
      return stage3_traffic(plan, deck, mesh);
    default:
      bad_stage(stage);
  }
}

}  // namespace zm
