// Stage 1 (P_os): optimizer state sharded. Full gradients accumulate as in stage 0; on the last
// micro-step each unit's gradients are reduce-scattered in place as soon as backward completes
// them, each rank updates its shard, and the updated shards are all-gathered in place.
#include "zero/stages.hpp"

namespace zm {

namespace {
constexpr StorageKinds kStage1Storage{Storage::Full, Storage::Full, Storage::Shard};
}  // namespace

std::vector<BufferSpec> stage1_buffers(const PartitionPlan& plan, const Deck& deck,
                                       const ZeroMesh& mesh) {
  return model_state_buffers(plan, deck, kStage1Storage, mesh);
}

// Per unit and step: one reduce-scatter after the last micro-step's backward (grads_ready), one
// all-gather of the updated shard (ZeroEngineT::after_unit_update).
PlannedCollectives stage1_traffic(const PartitionPlan& plan, const Deck& deck,
                                  const ZeroMesh& mesh) {
  return per_unit_traffic(plan, deck, mesh, 1, 1);
}

template <typename Real>
Stage1<Real>::Stage1(const PartitionPlan& plan, MeshComms& comms, const Deck& deck,
                     MemoryLedger* ledger)
    : ZeroEngineT<Real>(1, plan, comms, deck, kStage1Storage, ledger) {}

template <typename Real>
void Stage1<Real>::grads_ready(int unit) {
  this->fold_full_gradients(unit);
  if (!this->last_micro()) return;
  const UnitPartition& p = this->plan_->unit(unit);
  in_flight_.push_back(
      {unit, this->comm_->ireduce_scatter_sum(this->reduced_grad_at(unit, 0),
                                              this->reduced_grad_at(unit, this->rank_ * p.shard),
                                              static_cast<size_t>(p.shard), this->reduce_dtype(),
                                              {unit, CommPurpose::GradReduce})});
  if (!this->deck_->zero.overlap) finish_reductions();  // no overlap: blocking
}

template <typename Real>
void Stage1<Real>::finish_reductions() {
  // Each unit's shard, once reduced in the group, goes on across the groups (hybrid sharding).
  for (auto& [unit, request] : in_flight_) {
    request.wait(!this->deck_->zero.overlap);
    this->post_replica_reduction(unit);
  }
  in_flight_.clear();
}

template <typename Real>
void Stage1<Real>::finish_backward() {
  finish_reductions();
  this->finish_replica_reductions();
}

template class Stage1<float>;
#if ZEROMINI_HAVE_BF16
template class Stage1<bf16>;
#endif

}  // namespace zm
