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
                                               ShardGroupComms& comms, const Deck& deck,
                                               const std::vector<UnitEvent>& schedule,
                                               kernels::TeamShape team_shape,
                                               MemoryLedger* ledger) {
  switch (stage) {
    case 0:
      return std::make_unique<Stage0<Real>>(plan, comms, deck, team_shape, ledger);
    case 1:
      return std::make_unique<Stage1<Real>>(plan, comms, deck, team_shape, ledger);
    case 2:
      return std::make_unique<Stage2<Real>>(plan, comms, deck, team_shape, ledger);
    case 3:
      return std::make_unique<Stage3<Real>>(plan, comms, deck, schedule, team_shape, ledger);
    default:
      bad_stage(stage);
  }
}

template std::unique_ptr<ZeroEngineT<float>> make_engine(int, const PartitionPlan&,
                                                         ShardGroupComms&, const Deck&,
                                                         const std::vector<UnitEvent>&,
                                                         kernels::TeamShape, MemoryLedger*);
#if ZEROMINI_HAVE_BF16
template std::unique_ptr<ZeroEngineT<bf16>> make_engine(int, const PartitionPlan&, ShardGroupComms&,
                                                        const Deck&, const std::vector<UnitEvent>&,
                                                        kernels::TeamShape, MemoryLedger*);
#endif

std::vector<BufferSpec> ZeroEngine::buffer_plan(int stage, const PartitionPlan& plan,
                                                const Deck& deck) {
  switch (stage) {
    case 0:
      return stage0_buffers(plan, deck);
    case 1:
      return stage1_buffers(plan, deck);
    case 2:
      return stage2_buffers(plan, deck);
    case 3:
      return stage3_buffers(plan, deck);
    default:
      bad_stage(stage);
  }
}

PlannedCollectives per_unit_traffic(const PartitionPlan& plan, const Deck& deck,
                                    const ShardLayout& layout, int64_t reductions,
                                    int64_t gathers) {
  PlannedCollectives out;
  const int reduced = reduce_element_bytes(deck), gathered = param_element_bytes(deck);
  const int group = plan.ranks();
  for (int u = 0; u < plan.num_units(); ++u) {
    const int64_t padded = plan.unit(u).padded;
    for (int64_t i = 0; i < reductions; ++i)
      out.push_back({CommOp::ReduceScatter, padded, reduced, group});
    const int64_t shard = plan.unit(u).shard;
    const int groups = layout.groups();
    if (layout.hpz) {  // the shard reduce-scattered into sub-shards, and gathered back
      out.push_back({CommOp::ReduceScatter, shard, reduced, groups, CommLevel::InterGroup});
      out.push_back({CommOp::AllGather, shard, gathered, groups, CommLevel::InterGroup});
    } else if (layout.hybrid()) {
      out.push_back({CommOp::AllReduce, shard, reduced, groups, CommLevel::InterGroup});
    }
    for (int64_t i = 0; i < gathers; ++i)
      out.push_back({CommOp::AllGather, padded, gathered, group});
  }
  return out;
}

std::vector<ZeroEngine::PlannedCollective> ZeroEngine::traffic_plan(int stage,
                                                                    const PartitionPlan& plan,
                                                                    const Deck& deck,
                                                                    const ShardLayout& layout) {
  switch (stage) {
    case 0:
      return stage0_traffic(plan, deck);
    case 1:
      return stage1_traffic(plan, deck, layout);
    case 2:
      return stage2_traffic(plan, deck, layout);
    case 3:
      return stage3_traffic(plan, deck, layout);
    default:
      bad_stage(stage);
  }
}

}  // namespace zm
