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
}  // namespace

template <typename Real>
Stage3<Real>::Stage3(const PartitionPlan& plan, Communicator& comm, const Deck& deck,
                     const std::vector<UnitEvent>& schedule)
    : ZeroEngineT<Real>(3, plan, comm, deck, Storage::Shard, Storage::Shard, Storage::Shard),
      schedule_(schedule),
      prefetch_(static_cast<int>(prefetch_of(deck))) {
  this->allocate_model_state();
  gradients_.allocate(plan, deck);

  PlannedAllocator slots(slot_plan(plan, deck));
  slots_.resize(static_cast<size_t>(2 + prefetch_));
  slots_[0].buffer = slots.take<Real>("gathered.embed");
  for (int i = 0; i <= prefetch_; ++i)
    slots_[static_cast<size_t>(1 + i)].buffer = slots.take<Real>(fmt::format("gathered.{}", i));
  slots.finish();
}

template <typename Real>
Stage3<Real>::~Stage3() {
  for (Slot& slot : slots_) slot.gather = CommRequest();
}

template <typename Real>
std::vector<BufferSpec> Stage3<Real>::slot_plan(const PartitionPlan& plan, const Deck& deck) {
  std::vector<BufferSpec> buffers;
  buffers.push_back({"gathered.embed", MemCategory::CommBuffers, plan.unit(0).padded,
                     compute_element_bytes(deck)});
  const int64_t block = plan.max_padded_unit(1, plan.num_units() - 1);
  for (int64_t i = 0; i <= prefetch_of(deck); ++i)
    buffers.push_back({fmt::format("gathered.{}", i), MemCategory::CommBuffers, block,
                       compute_element_bytes(deck)});
  return buffers;
}

template <typename Real>
std::vector<BufferSpec> Stage3<Real>::plan_buffers(const PartitionPlan& plan, const Deck& deck) {
  auto buffers = ZeroEngineT<Real>::model_state_plan(plan, deck, Storage::Shard, Storage::Shard,
                                                     Storage::Shard);
  ShardedGradients<Real>::add_to_plan(buffers, plan, deck);
  for (const auto& slot : slot_plan(plan, deck)) buffers.push_back(slot);
  return buffers;
}

template <typename Real>
int Stage3<Real>::slot_kind(int event) const {
  return schedule_[static_cast<size_t>(event)].unit == plan_->layout().embedding_unit() ? 0 : 1;
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
    const UnitPartition& p = plan_->unit(unit);
    slot.event = next_gather_;
    slot.gather = comm_->iall_gather(param_at(unit, rank_ * p.shard), slot.buffer.data(),
                                     static_cast<size_t>(p.shard), dtype_of<Real>());
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
Real* Stage3<Real>::grads(int unit) {
  return gradients_.bucket_for(unit, *this);
}

template <typename Real>
void Stage3<Real>::grads_ready(int unit) {
  gradients_.unit_ready(unit, *this, micro_ == 0, deck_->zero.overlap);
}

template <typename Real>
void Stage3<Real>::finish_backward() {
  gradients_.finish(*this);
}

// Per unit and step: a reduce-scatter every micro-step, and two all-gathers every micro-step,
// before the unit's forward and again before its backward (the embedding unit's second gather
// serves the LM head's forward and backward).
PlannedCollectives stage3_traffic(const PartitionPlan& plan, const Deck& deck) {
  return per_unit_traffic(plan, deck, deck.train.grad_accum, 2 * deck.train.grad_accum);
}

template class Stage3<float>;
#if ZEROMINI_HAVE_BF16
template class Stage3<bf16>;
#endif

}  // namespace zm
