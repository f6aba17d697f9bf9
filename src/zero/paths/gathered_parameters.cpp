// ParameterPath::GatheredPerUnit (stage 3, P_os+g+p): each rank holds its shard of the parameters.
// Before a unit's forward, and again before its backward, its parameters are all-gathered into a
// slot, used and released; gathers run `zero.prefetch` units ahead along the model's schedule so
// that they overlap compute.
#include "core/error.hpp"
#include "zero/paths/parameter_path.hpp"
#include "zero/unit_buffer_set.hpp"

namespace zm {

namespace {

int64_t prefetch_of(const Deck& deck) {
  return deck.zero.overlap ? deck.zero.prefetch : 0;
}

// The gathered units: the embedding unit has its own slot; the others share 1 + prefetch.
UnitBufferSet gather_slot_set(const Partition& partition, const Deck& deck) {
  UnitBufferSet slots;
  slots.prefix = "gathered";
  slots.embed_elements = partition.unit(0).padded;
  slots.shared_elements = partition.max_padded_unit(1, partition.num_units() - 1);
  slots.shared = static_cast<int>(1 + prefetch_of(deck));
  slots.element_bytes = param_element_bytes(deck);
  return slots;
}

template <typename Real>
class GatheredParameters final : public ParameterPathT<Real> {
 public:
  GatheredParameters(const Partition& partition, const Deck& deck,
                     const std::vector<UnitEvent>& schedule, MemoryLedger* ledger);
  ~GatheredParameters() override;

  const Real* acquire(UnitEvent event, ZeroEngineT<Real>& engine) override;
  void release(UnitEvent event, ZeroEngineT<Real>& engine) override;
  void begin_micro_step(ZeroEngineT<Real>& engine) override;

 private:
  struct Slot {
    TrackedBuffer<Real> buffer;
    int event = -1;  // index into schedule_ of the event using it, -1 when free
    CommRequest gather;
  };
  int slot_kind(int event) const;  // 0 embedding slot, 1 other slots
  // Posts gathers for the next events while slots are free.
  void post_gathers(ZeroEngineT<Real>& engine);
  int find_slot(int event) const;

  std::vector<UnitEvent> schedule_;
  int embedding_unit_;
  std::vector<Slot> slots_;  // [0] embedding, [1..] others
  int next_event_ = 0;       // next schedule_ entry acquire() expects
  int next_gather_ = 0;      // next schedule_ entry without a posted gather
  int prefetch_ = 0;
};

template <typename Real>
GatheredParameters<Real>::GatheredParameters(const Partition& partition, const Deck& deck,
                                             const std::vector<UnitEvent>& schedule,
                                             MemoryLedger* ledger)
    : schedule_(schedule),
      embedding_unit_(partition.layout().embedding_unit()),
      prefetch_(static_cast<int>(prefetch_of(deck))) {
  const UnitBufferSet slot_set = gather_slot_set(partition, deck);
  std::vector<BufferSpec> slot_buffers;
  slot_set.add_to(slot_buffers);
  PlannedAllocator alloc(slot_buffers, ledger);
  for (TrackedBuffer<Real>& buffer : slot_set.take<Real>(alloc)) {
    slots_.emplace_back();
    slots_.back().buffer = std::move(buffer);
  }
  alloc.finish();
}

template <typename Real>
GatheredParameters<Real>::~GatheredParameters() {
  for (Slot& slot : slots_) slot.gather = CommRequest();
}

template <typename Real>
int GatheredParameters<Real>::slot_kind(int event) const {
  return schedule_[static_cast<size_t>(event)].unit == embedding_unit_ ? 0 : 1;
}

template <typename Real>
int GatheredParameters<Real>::find_slot(int event) const {
  for (size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].event == event) return static_cast<int>(i);
  return -1;
}

template <typename Real>
void GatheredParameters<Real>::post_gathers(ZeroEngineT<Real>& engine) {
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
    const UnitPartition& p = engine.partition().unit(unit);
    slot.event = next_gather_;
    slot.gather = engine.comm().iall_gather(engine.param_at(unit, engine.comm().rank() * p.shard),
                                            slot.buffer.data(), static_cast<size_t>(p.shard),
                                            dtype_of<Real>(), {unit, CommPurpose::ParamGather});
    ++next_gather_;
  }
}

template <typename Real>
void GatheredParameters<Real>::begin_micro_step(ZeroEngineT<Real>& engine) {
  next_event_ = 0;
  next_gather_ = 0;
  post_gathers(engine);
}

template <typename Real>
const Real* GatheredParameters<Real>::acquire(UnitEvent event, ZeroEngineT<Real>& engine) {
  ZM_ASSERT(next_event_ < static_cast<int>(schedule_.size()) &&
                schedule_[static_cast<size_t>(next_event_)] == event,
            "unit {} acquired out of the schedule (expected event {})", event.unit, next_event_);
  post_gathers(engine);
  const int slot = find_slot(next_event_);
  ZM_ASSERT(slot >= 0, "no slot holds event {}", next_event_);
  slots_[static_cast<size_t>(slot)].gather.wait();
  ++next_event_;
  post_gathers(engine);  // prefetch what follows
  return slots_[static_cast<size_t>(slot)].buffer.data();
}

template <typename Real>
void GatheredParameters<Real>::release(UnitEvent event, ZeroEngineT<Real>& engine) {
  for (Slot& slot : slots_) {
    if (slot.event >= 0 && slot.event < next_event_ &&
        schedule_[static_cast<size_t>(slot.event)] == event) {
      slot.event = -1;
      post_gathers(engine);
      return;
    }
  }
  ZM_ASSERT(false, "release of unit {} that is not held", event.unit);
}

}  // namespace

// Per unit and step: two all-gathers every micro-step, before the unit's forward and again before
// its backward (the embedding unit's second gather serves the LM head's forward and backward);
// the gather slots.
PathDeclaration gathered_parameters_declaration(const Partition& partition, const Deck& deck) {
  PathDeclaration out;
  gather_slot_set(partition, deck).add_to(out.buffers);
  out.gathers_per_unit = 2 * deck.train.grad_accum;
  return out;
}

template <typename Real>
std::unique_ptr<ParameterPathT<Real>> make_gathered_parameters(
    const Partition& partition, const Deck& deck, const std::vector<UnitEvent>& schedule,
    MemoryLedger* ledger) {
  return std::make_unique<GatheredParameters<Real>>(partition, deck, schedule, ledger);
}

template std::unique_ptr<ParameterPathT<float>> make_gathered_parameters(
    const Partition&, const Deck&, const std::vector<UnitEvent>&, MemoryLedger*);
#if ZEROMINI_HAVE_BF16
template std::unique_ptr<ParameterPathT<bf16>> make_gathered_parameters(
    const Partition&, const Deck&, const std::vector<UnitEvent>&, MemoryLedger*);
#endif

}  // namespace zm
