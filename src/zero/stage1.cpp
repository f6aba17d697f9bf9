// Stage 1 (P_os): optimizer state sharded. Full gradients accumulate as in stage 0; on the last
// micro-step each unit's gradients are reduce-scattered in place as soon as backward completes
// them, each rank updates its shard, and the updated shards are all-gathered in place.
#include "zero/stages.hpp"

namespace zm {

template <typename Real>
Stage1<Real>::Stage1(const PartitionPlan& plan, Communicator& comm, const Deck& deck)
    : ZeroEngineT<Real>(1, plan, comm, deck, Storage::Full, Storage::Full, Storage::Shard) {
  this->allocate_model_state();
}

template <typename Real>
std::vector<BufferSpec> Stage1<Real>::plan_buffers(const PartitionPlan& plan, const Deck& deck) {
  return ZeroEngineT<Real>::model_state_plan(plan, deck, Storage::Full, Storage::Full,
                                             Storage::Shard);
}

template <typename Real>
const Real* Stage1<Real>::acquire(UnitEvent event) {
  return param_at(event.unit, 0);
}

template <typename Real>
Real* Stage1<Real>::grads(int unit) {
  return grad_at(unit, 0);
}

template <typename Real>
void Stage1<Real>::grads_ready(int unit) {
  if (!last_micro()) return;
  const UnitPartition& p = plan_->unit(unit);
  Real* full = grad_at(unit, 0);
  in_flight_.push_back(comm_->ireduce_scatter_sum(full, full + rank_ * p.shard,
                                                  static_cast<size_t>(p.shard), dtype_of<Real>()));
  if (!deck_->zero.overlap) in_flight_.back().wait();
}

template <typename Real>
void Stage1<Real>::finish_backward() {
  for (CommRequest& request : in_flight_) request.wait();
  in_flight_.clear();
}

// Per unit and step: one reduce-scatter after the last micro-step's backward (grads_ready), one
// all-gather of the updated shard (after_unit_update).
PlannedCollectives stage1_traffic(const PartitionPlan& plan, const Deck& deck) {
  return per_unit_traffic(plan, deck, 1, 1);
}

template class Stage1<float>;
#if ZEROMINI_HAVE_BF16
template class Stage1<bf16>;
#endif

}  // namespace zm
