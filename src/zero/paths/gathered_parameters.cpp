// ParameterPath::GatheredPerUnit (stage 3, P_os+g+p): each rank holds its shard of the parameters.
// Before a unit's forward, and again before its backward, its parameters are all-gathered into a
// slot, used and released; gathers run `zero.prefetch` units ahead along the model's unit order so
// that they overlap compute.
//
// Each gather is the unit's UnitGather of the step's schedule (zero/schedule.hpp), posted through
// its strategy into the slot; acquire() waits for it and lets the strategy finish its work on the
// slot (a compressed gather unpacks into it: zero/collective_strategy.hpp, `arrived`).
//
// A forward-only pass (between steps) walks the unit order's events up to the head's, which come
// first in it, and gathers nothing beyond them: the UnitGather posts the schedule counts per
// forward-only micro-batch (ScheduledCollective::per_forward_only).
//
// Where the parameter shard lives in another memory (zero/state_tier.hpp), each gather first has
// the tier stage it to its own place in the slot, and gathers in place from there.
#include <algorithm>

#include "core/error.hpp"
#include "zero/paths/parameter_path.hpp"
#include "zero/schedule_execution.hpp"
#include "zero/unit_buffer_set.hpp"

namespace zm {

namespace {

int64_t prefetch_of(const ZeroOptions& options) {
  return options.overlap ? options.prefetch : 0;
}

// The gathered units: the embedding unit has its own slot; the others share 1 + prefetch.
UnitBufferSet gather_slot_set(const Partition& partition, const ZeroOptions& options) {
  UnitBufferSet slots;
  slots.prefix = "gathered";
  slots.embed_elements = partition.unit(0).padded;
  slots.shared_elements = partition.max_padded_unit(1, partition.num_units() - 1);
  slots.shared = unit_gather_slots(options) - 1;
  slots.element_bytes = param_element_bytes(options.policy);
  return slots;
}

// The slots, as the path allocates them.
std::vector<BufferSpec> gather_buffers(const Partition& partition, const ZeroOptions& options) {
  std::vector<BufferSpec> buffers;
  gather_slot_set(partition, options).add_to(buffers);
  return buffers;
}

template <typename Real>
class GatheredParameters final : public ParameterPathT<Real> {
 public:
  GatheredParameters(const Partition& partition, const ZeroOptions& options,
                     const std::vector<UnitEvent>& unit_order, MemoryLedger* ledger);
  ~GatheredParameters() override;

  const Real* acquire(UnitEvent event, ZeroEngineT<Real>& engine) override;
  void release(UnitEvent event, ZeroEngineT<Real>& engine) override;
  void begin_micro_step(ZeroEngineT<Real>& engine) override;
  void begin_forward_only(ZeroEngineT<Real>& engine) override;
  void end_forward_only(ZeroEngineT<Real>& engine) override;

 private:
  struct Slot {
    TrackedBuffer<Real> buffer;
    int event = -1;  // index into unit_order_ of the event using it, -1 when free
    CommRequest gather;
  };
  int slot_kind(int event) const;  // 0 embedding slot, 1 other slots
  // Posts gathers for the next events while slots are free.
  void post_gathers(ZeroEngineT<Real>& engine);
  int find_slot(int event) const;
  // Posts the gather of unit's shards into slot `index`.
  CommRequest post_gather(int index, int unit, ZeroEngineT<Real>& engine) const;

  std::vector<UnitEvent> unit_order_;
  int embedding_unit_;
  std::vector<Slot> slots_;  // [0] embedding, [1..] others
  int next_event_ = 0;       // next unit_order_ entry acquire() expects
  int next_gather_ = 0;      // next unit_order_ entry without a posted gather
  int end_event_ = 0;        // the events of this pass: [0, end_event_) of unit_order_
  int forward_events_ = 0;   // the events of a forward: up to the first backward's
  int prefetch_ = 0;
};

template <typename Real>
GatheredParameters<Real>::GatheredParameters(const Partition& partition, const ZeroOptions& options,
                                             const std::vector<UnitEvent>& unit_order,
                                             MemoryLedger* ledger)
    : unit_order_(unit_order),
      embedding_unit_(partition.layout().embedding_unit()),
      prefetch_(static_cast<int>(prefetch_of(options))) {
  end_event_ = static_cast<int>(unit_order_.size());
  forward_events_ =
      static_cast<int>(std::find_if(unit_order_.begin(), unit_order_.end(),
                                    [](const UnitEvent& e) { return e.use == UnitUse::Backward; }) -
                       unit_order_.begin());
  PlannedAllocator alloc(gather_buffers(partition, options), ledger);
  for (TrackedBuffer<Real>& buffer : gather_slot_set(partition, options).take<Real>(alloc)) {
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
  return unit_order_[static_cast<size_t>(event)].unit == embedding_unit_ ? 0 : 1;
}

template <typename Real>
int GatheredParameters<Real>::find_slot(int event) const {
  for (size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].event == event) return static_cast<int>(i);
  return -1;
}

template <typename Real>
CommRequest GatheredParameters<Real>::post_gather(int index, int unit,
                                                  ZeroEngineT<Real>& engine) const {
  const Slot& slot = slots_[static_cast<size_t>(index)];
  const ScheduledCollective& gather = engine.schedule().of(unit, ScheduleRole::UnitGather);
  // The rank's shard, or where its tier staged it: its own place in the slot, gathered in place.
  Real* place = slot.buffer.data() + engine.comm().rank() * engine.partition().unit(unit).shard;
  const Real* shard = engine.shard_source().shard(unit, place, engine);
  return post_scheduled(gather, engine, {const_cast<Real*>(shard), slot.buffer.data(), index});
}

template <typename Real>
void GatheredParameters<Real>::post_gathers(ZeroEngineT<Real>& engine) {
  // In the unit order only, so that every rank posts the same collectives in the same order.
  while (next_gather_ < end_event_ && next_gather_ <= next_event_ + prefetch_) {
    int free_slot = -1;
    if (slot_kind(next_gather_) == 0) {
      if (slots_[0].event < 0) free_slot = 0;
    } else {
      for (size_t i = 1; i < slots_.size() && free_slot < 0; ++i)
        if (slots_[i].event < 0) free_slot = static_cast<int>(i);
    }
    if (free_slot < 0) return;
    Slot& slot = slots_[static_cast<size_t>(free_slot)];
    slot.event = next_gather_;
    slot.gather =
        post_gather(free_slot, unit_order_[static_cast<size_t>(next_gather_)].unit, engine);
    ++next_gather_;
  }
}

template <typename Real>
void GatheredParameters<Real>::begin_micro_step(ZeroEngineT<Real>& engine) {
  next_event_ = 0;
  next_gather_ = 0;
  end_event_ = static_cast<int>(unit_order_.size());
  post_gathers(engine);
}

template <typename Real>
void GatheredParameters<Real>::begin_forward_only(ZeroEngineT<Real>& engine) {
  next_event_ = 0;
  next_gather_ = 0;
  end_event_ = forward_events_;
  post_gathers(engine);
}

template <typename Real>
void GatheredParameters<Real>::end_forward_only(ZeroEngineT<Real>&) {
  ZM_ASSERT(next_event_ == end_event_, "the forward-only pass acquired {} of its {} events",
            next_event_, end_event_);
  for (const Slot& slot : slots_)
    ZM_ASSERT(slot.event < 0, "the forward-only pass left event {} gathered", slot.event);
  end_event_ = static_cast<int>(unit_order_.size());
}

template <typename Real>
const Real* GatheredParameters<Real>::acquire(UnitEvent event, ZeroEngineT<Real>& engine) {
  ZM_ASSERT(next_event_ < end_event_ && unit_order_[static_cast<size_t>(next_event_)] == event,
            "unit {} acquired out of the unit order (expected event {})", event.unit, next_event_);
  post_gathers(engine);
  const int slot = find_slot(next_event_);
  ZM_ASSERT(slot >= 0, "no slot holds event {}", next_event_);
  slots_[static_cast<size_t>(slot)].gather.wait();
  Slot& held = slots_[static_cast<size_t>(slot)];
  scheduled_arrived(engine.schedule().of(event.unit, ScheduleRole::UnitGather), engine,
                    {nullptr, held.buffer.data(), slot});
  ++next_event_;
  post_gathers(engine);  // prefetch what follows
  return slots_[static_cast<size_t>(slot)].buffer.data();
}

template <typename Real>
void GatheredParameters<Real>::release(UnitEvent event, ZeroEngineT<Real>& engine) {
  for (Slot& slot : slots_) {
    if (slot.event >= 0 && slot.event < next_event_ &&
        unit_order_[static_cast<size_t>(slot.event)] == event) {
      slot.event = -1;
      post_gathers(engine);
      return;
    }
  }
  ZM_ASSERT(false, "release of unit {} that is not held", event.unit);
}

// The core's: the shard where the engine holds it.
template <typename Real>
class ResidentShard final : public ShardSourceT<Real> {
 public:
  const Real* shard(int unit, Real*, ZeroEngineT<Real>& engine) override {
    return engine.param_at(unit, engine.comm().rank() * engine.partition().unit(unit).shard);
  }
};

}  // namespace

template <typename Real>
std::unique_ptr<ShardSourceT<Real>> resident_shard() {
  return std::make_unique<ResidentShard<Real>>();
}

// The gather slots.
PathDeclaration gathered_parameters_declaration(const Partition& partition,
                                                const ZeroOptions& options) {
  return {gather_buffers(partition, options)};
}

template <typename Real>
std::unique_ptr<ParameterPathT<Real>> make_gathered_parameters(
    const Partition& partition, const ZeroOptions& options,
    const std::vector<UnitEvent>& unit_order, MemoryLedger* ledger) {
  return std::make_unique<GatheredParameters<Real>>(partition, options, unit_order, ledger);
}

#define ZM_INSTANTIATE(R)                                               \
  template std::unique_ptr<ShardSourceT<R>> resident_shard();           \
  template std::unique_ptr<ParameterPathT<R>> make_gathered_parameters( \
      const Partition&, const ZeroOptions&, const std::vector<UnitEvent>&, MemoryLedger*);
ZM_FOR_EACH_REAL(ZM_INSTANTIATE)
#undef ZM_INSTANTIATE

}  // namespace zm
