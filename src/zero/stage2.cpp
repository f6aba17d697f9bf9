// Stage 2 (P_os+g): gradients sharded too. Each unit's gradients are reduce-scattered into this
// rank's shard as soon as backward completes them, and the bucket they filled is reused; the
// updated parameter shards are all-gathered in place as in stage 1.
#include "zero/stages.hpp"

namespace zm {

template <typename Real>
Stage2<Real>::Stage2(const PartitionPlan& plan, Communicator& comm, const Deck& deck)
    : ZeroEngineT<Real>(2, plan, comm, deck, Storage::Full, Storage::Shard, Storage::Shard) {
  this->allocate_model_state();
  gradients_.allocate(plan, deck);
}

template <typename Real>
std::vector<BufferSpec> Stage2<Real>::plan_buffers(const PartitionPlan& plan, const Deck& deck) {
  auto buffers = ZeroEngineT<Real>::model_state_plan(plan, deck, Storage::Full, Storage::Shard,
                                                     Storage::Shard);
  ShardedGradients<Real>::add_to_plan(buffers, plan, deck);
  return buffers;
}

template <typename Real>
const Real* Stage2<Real>::acquire(UnitEvent event) {
  return param_at(event.unit, 0);
}

template <typename Real>
Real* Stage2<Real>::grads(int unit) {
  return gradients_.bucket_for(unit, *this);
}

template <typename Real>
void Stage2<Real>::grads_ready(int unit) {
  gradients_.unit_ready(unit, *this, micro_ == 0, deck_->zero.overlap);
}

template <typename Real>
void Stage2<Real>::finish_backward() {
  gradients_.finish(*this);
}

// Per unit and step: a reduce-scatter every micro-step (grads_ready), one all-gather of the
// updated shard (after_unit_update).
PlannedCollectives stage2_traffic(const PartitionPlan& plan, const Deck& deck) {
  return per_unit_traffic(plan, deck, deck.train.grad_accum, 1);
}

template class Stage2<float>;
#if ZEROMINI_HAVE_BF16
template class Stage2<bf16>;
#endif

}  // namespace zm
