// Stage 3 (P_os+g+p): parameters sharded too. Before a unit's forward, and again before its
// backward, its parameters are all-gathered into a slot, used and released; gathers run
// `zero.prefetch` units ahead along the model's schedule so that they overlap compute.
// Gradients as in stage 2.
#include <fmt/format.h>

#include "core/error.hpp"
#include "zero/stages.hpp"

namespace zm {

namespace {
int64_t prefetch_of(const Deck& deck) {
  return deck.zero.overlap ? deck.zero.prefetch : 0;
}

constexpr StorageKinds kStage3Storage{Storage::Shard, Storage::Shard, Storage::Shard};
// hpZ (zero.secondary_shard_size): the optimizer state in sub-shards over all ranks.
constexpr StorageKinds kStage3HpzStorage{Storage::Shard, Storage::Shard, Storage::SubShard};

StorageKinds stage3_storage(const PartitionPlan& plan) {
  return plan.sub_shards() > 1 ? kStage3HpzStorage : kStage3Storage;
}
}  // namespace

UnitBufferSet gather_slot_set(const PartitionPlan& plan, const Deck& deck) {
  UnitBufferSet slots;
  slots.prefix = "gathered";
  slots.embed_elements = plan.unit(0).padded;
  slots.shared_elements = plan.max_padded_unit(1, plan.num_units() - 1);
  slots.shared = static_cast<int>(1 + prefetch_of(deck));
  slots.element_bytes = param_element_bytes(deck);
  return slots;
}

std::vector<BufferSpec> stage3_buffers(const PartitionPlan& plan, const Deck& deck,
                                       const ZeroMesh& mesh) {
  auto buffers = model_state_buffers(plan, deck, stage3_storage(plan), mesh);
  for (BufferSpec& spec : sharded_gradient_buffers(plan, deck)) buffers.push_back(spec);
  gather_slot_set(plan, deck).add_to(buffers);
  return buffers;
}

// Per unit and step: a reduce-scatter every micro-step, and two all-gathers every micro-step,
// before the unit's forward and again before its backward (the embedding unit's second gather
// serves the LM head's forward and backward).
PlannedCollectives stage3_traffic(const PartitionPlan& plan, const Deck& deck,
                                  const ZeroMesh& mesh) {
  return per_unit_traffic(plan, deck, mesh, deck.train.grad_accum, 2 * deck.train.grad_accum);
}

template <typename Real>
Stage3<Real>::Stage3(const PartitionPlan& plan, MeshComms& comms, const Deck& deck,
                     const std::vector<UnitEvent>& schedule, MemoryLedger* ledger)
    : ZeroEngineT<Real>(3, plan, comms, deck, stage3_storage(plan), ledger),
      schedule_(schedule),
      prefetch_(static_cast<int>(prefetch_of(deck))) {
  gradients_.allocate(plan, deck, ledger);
  const UnitBufferSet slot_set = gather_slot_set(plan, deck);
  std::vector<BufferSpec> slot_plan;
  slot_set.add_to(slot_plan);
  PlannedAllocator alloc(slot_plan, ledger);
  for (TrackedBuffer<Real>& buffer : slot_set.take<Real>(alloc)) {
    slots_.emplace_back();
    slots_.back().buffer = std::move(buffer);
  }
  alloc.finish();
}

template <typename Real>
Stage3<Real>::~Stage3() {
  for (Slot& slot : slots_) slot.gather = CommRequest();
}

template <typename Real>
int Stage3<Real>::slot_kind(int event) const {
  return schedule_[static_cast<size_t>(event)].unit == this->plan_->layout().embedding_unit() ? 0
                                                                                              : 1;
}

template <typename Real>
int Stage3<Real>::find_slot(int event) const {
  for (size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].event == event) return static_cast<int>(i);
  return -1;
}

template <typename Real>
void Stage3<Real>::post_gathers() {
  // In schedule order only, so that every rank posts the same collectives in the same order.
  while (next_gather_ < static_cast<int>(schedule_.size()) &&
         next_gather_ <= next_event_ + prefetch_) {
    int free_slot = -1;
    if (slot_kind(next_gather_) == 0) {
      if (slots_[0].event < 0) free_slot = 0;
    } else {
      for (size_t i = 1; i < slots_.size() && free_slot < 0; ++i)
        if (slots_[i].event < 0) free_slot = static_cast<int>(i);
    }
    if (free_slot < 0) return;
    Slot& slot = slots_[static_cast<size_t>(free_slot)];
    const int unit = schedule_[static_cast<size_t>(next_gather_)].unit;
    const UnitPartition& p = this->plan_->unit(unit);
    slot.event = next_gather_;
    slot.gather = this->comm_->iall_gather(this->param_at(unit, this->rank_ * p.shard),
                                           slot.buffer.data(), static_cast<size_t>(p.shard),
                                           dtype_of<Real>(), {unit, CommPurpose::ParamGather});
    ++next_gather_;
  }
}

template <typename Real>
void Stage3<Real>::begin_micro_step(int64_t micro, int64_t micro_steps) {
  ZeroEngineT<Real>::begin_micro_step(micro, micro_steps);
  next_event_ = 0;
  next_gather_ = 0;
  post_gathers();
}

template <typename Real>
const Real* Stage3<Real>::acquire(UnitEvent event) {
  ZM_ASSERT(next_event_ < static_cast<int>(schedule_.size()) &&
                schedule_[static_cast<size_t>(next_event_)] == event,
            "unit {} acquired out of the schedule (expected event {})", event.unit, next_event_);
  post_gathers();
  const int slot = find_slot(next_event_);
  ZM_ASSERT(slot >= 0, "no slot holds event {}", next_event_);
  slots_[static_cast<size_t>(slot)].gather.wait();
  ++next_event_;
  post_gathers();  // prefetch what follows
  return slots_[static_cast<size_t>(slot)].buffer.data();
}

template <typename Real>
void Stage3<Real>::release(UnitEvent event) {
  for (Slot& slot : slots_) {
    if (slot.event >= 0 && slot.event < next_event_ &&
        schedule_[static_cast<size_t>(slot.event)] == event) {
      slot.event = -1;
      post_gathers();
      return;
    }
  }
  ZM_ASSERT(false, "release of unit {} that is not held", event.unit);
}

template <typename Real>
void Stage3<Real>::grads_ready(int unit) {
  gradients_.unit_ready(unit, *this, this->micro_ == 0, this->last_micro(),
                        this->deck_->zero.overlap);
}

template class Stage3<float>;
#if ZEROMINI_HAVE_BF16
template class Stage3<bf16>;
#endif

}  // namespace zm
