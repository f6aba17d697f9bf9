#include "core/error.hpp"
#include "zero/stages.hpp"

namespace zm {

namespace {

template <typename Real>
std::unique_ptr<ZeroEngine> create_typed(int stage, const PartitionPlan& plan, Communicator& comm,
                                         const Deck& deck, const std::vector<UnitEvent>& schedule) {
  switch (stage) {
    case 0:
      return std::make_unique<Stage0<Real>>(plan, comm, deck);
    case 1:
      return std::make_unique<Stage1<Real>>(plan, comm, deck);
    case 2:
      return std::make_unique<Stage2<Real>>(plan, comm, deck);
    case 3:
      return std::make_unique<Stage3<Real>>(plan, comm, deck, schedule);
    default:
      fail("zero.stage = {}: expected an integer in 0..3", stage);
  }
}

// The stages' plans read element sizes from the deck, not from Real: Stage<float>'s serve every
// precision, in builds without a bf16 type too (the planner prices bf16 runs anywhere).
std::vector<BufferSpec> plan_of_stage(int stage, const PartitionPlan& plan, const Deck& deck) {
  switch (stage) {
    case 0:
      return Stage0<float>::plan_buffers(plan, deck);
    case 1:
      return Stage1<float>::plan_buffers(plan, deck);
    case 2:
      return Stage2<float>::plan_buffers(plan, deck);
    case 3:
      return Stage3<float>::plan_buffers(plan, deck);
    default:
      fail("zero.stage = {}: expected an integer in 0..3", stage);
  }
}

}  // namespace

std::unique_ptr<ZeroEngine> ZeroEngine::create(int stage, const PartitionPlan& plan,
                                               Communicator& comm, const Deck& deck,
                                               const std::vector<UnitEvent>& schedule) {
  if (compute_element_bytes(deck) == 4)
    return create_typed<float>(stage, plan, comm, deck, schedule);
#if ZEROMINI_HAVE_BF16
  return create_typed<bf16>(stage, plan, comm, deck, schedule);
#else
  fail("train.precision = \"{}\": this build has no bfloat16 type (it needs Kokkos >= 4)",
       precision_name(deck.train.precision));
#endif
}

std::vector<BufferSpec> ZeroEngine::buffer_plan(int stage, const PartitionPlan& plan,
                                                const Deck& deck) {
  return plan_of_stage(stage, plan, deck);
}

PlannedCollectives per_unit_traffic(const PartitionPlan& plan, const Deck& deck, int64_t reductions,
                                    int64_t gathers) {
  PlannedCollectives out;
  const int element = compute_element_bytes(deck);
  for (int u = 0; u < plan.num_units(); ++u) {
    const int64_t padded = plan.unit(u).padded;
    for (int64_t i = 0; i < reductions; ++i)
      out.push_back({CommOp::ReduceScatter, padded, element});
    for (int64_t i = 0; i < gathers; ++i) out.push_back({CommOp::AllGather, padded, element});
  }
  return out;
}

std::vector<ZeroEngine::PlannedCollective> ZeroEngine::traffic_plan(int stage,
                                                                    const PartitionPlan& plan,
                                                                    const Deck& deck) {
  switch (stage) {
    case 0:
      return stage0_traffic(plan, deck);
    case 1:
      return stage1_traffic(plan, deck);
    case 2:
      return stage2_traffic(plan, deck);
    case 3:
      return stage3_traffic(plan, deck);
    default:
      fail("zero.stage = {}: expected an integer in 0..3", stage);
  }
}

}  // namespace zm
