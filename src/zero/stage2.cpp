// Stage 2 (P_os+g): gradients sharded too. Each unit's gradients are reduce-scattered into this
// rank's shard as soon as backward completes them, and the bucket they filled is reused; the
// updated parameter shards are all-gathered in place as in stage 1.
#include "zero/stages.hpp"

namespace zm {

namespace {
constexpr StorageKinds kStage2Storage{Storage::Full, Storage::Shard, Storage::Shard};
}  // namespace

std::vector<BufferSpec> stage2_buffers(const PartitionPlan& plan, const Deck& deck,
                                       const ZeroMesh& mesh) {
  auto buffers = model_state_buffers(plan, deck, kStage2Storage, mesh);
  for (BufferSpec& spec : sharded_gradient_buffers(plan, deck)) buffers.push_back(spec);
  return buffers;
}

// Per unit and step: a reduce-scatter every micro-step (grads_ready), one all-gather of the
// updated shard (ZeroEngineT::after_unit_update).
PlannedCollectives stage2_traffic(const PartitionPlan& plan, const Deck& deck,
                                  const ZeroMesh& mesh) {
  return per_unit_traffic(plan, deck, mesh, deck.train.grad_accum, 1);
}

template <typename Real>
Stage2<Real>::Stage2(const PartitionPlan& plan, MeshComms& comms, const Deck& deck,
                     MemoryLedger* ledger)
    : ZeroEngineT<Real>(2, plan, comms, deck, kStage2Storage, ledger) {
  gradients_.allocate(plan, deck, ledger);
}

template <typename Real>
void Stage2<Real>::grads_ready(int unit) {
  gradients_.unit_ready(unit, *this, this->micro_ == 0, this->last_micro(),
                        this->deck_->zero.overlap);
}

template class Stage2<float>;
#if ZEROMINI_HAVE_BF16
template class Stage2<bf16>;
#endif

}  // namespace zm
