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
// forward-only micro-batch (ScheduledCollective::per_forward_only). A model held in parts (a
// pipeline stage without the head) runs each training forward so, and its backward later as a
// pass over the events that follow the forward's (begin_micro_step's `forward_apart`).
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

// The gathered units: the embedding unit has its own slot; the others share 1 + prefetch.
UnitBufferSet gather_slots(const Partition& partition, const ZeroOptions& options) {
  UnitBufferSet slots;
  slots.prefix = "gathered";
  slots.embed_elements = partition.unit(0).padded;
  slots.shared_elements = partition.max_padded_unit(1, partition.num_units() - 1);
  slots.shared = unit_gather_slots(options) - 1;
  slots.element_bytes = element_bytes(options.policy.param);
  return slots;
}

template <typename Real>
class GatheredParameters final : public ParameterPathT<Real> {
 public:
  GatheredParameters(const Partition& partition, const ZeroOptions& options,
                     const std::vector<UnitEvent>& unit_order, MemoryLedger* ledger)
      : unit_order_(unit_order),
        embedding_unit_(partition.layout().embedding_unit()),
        end_event_(static_cast<int>(unit_order.size())),
        prefetch_(options.overlap ? static_cast<int>(options.prefetch) : 0) {
    forward_events_ =
        static_cast<int>(std::find_if(unit_order_.begin(), unit_order_.end(),
                                      [](const UnitEvent& e) {
                                        return e.use != UnitUse::Forward && e.use != UnitUse::Head;
                                      }) -
                         unit_order_.begin());
    PlannedAllocator alloc(gather_slot_buffers(partition, options), ledger);
    for (TrackedBuffer<Real>& buffer : gather_slots(partition, options).take<Real>(alloc)) {
      slots_.emplace_back();
      slots_.back().buffer = std::move(buffer);
    }
    alloc.finish();
  }
  ~GatheredParameters() override {
    for (Slot& slot : slots_) slot.gather = CommRequest();
  }

  const Real* acquire(UnitEvent event, ZeroEngineT<Real>& engine) override {
    ZM_ASSERT(next_event_ < end_event_ && unit_order_[static_cast<size_t>(next_event_)] == event,
              "unit {} acquired out of the unit order (expected event {})", event.unit,
              next_event_);
    post_gathers(engine);
    size_t slot = 0;
    while (slot < slots_.size() && slots_[slot].event != next_event_) ++slot;
    ZM_ASSERT(slot < slots_.size(), "no slot holds event {}", next_event_);
    Slot& held = slots_[slot];
    held.gather.wait();
    scheduled_arrived(engine.schedule().of(event.unit, ScheduleRole::UnitGather), engine,
                      {nullptr, held.buffer.data(), static_cast<int>(slot)});
    ++next_event_;
    post_gathers(engine);  // prefetch what follows
    return held.buffer.data();
  }
  void release(UnitEvent event, ZeroEngineT<Real>& engine) override {
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
  void begin_micro_step(ZeroEngineT<Real>& engine, bool forward_apart) override {
    begin_pass(forward_apart ? forward_events_ : 0, static_cast<int>(unit_order_.size()), engine);
  }
  void begin_forward_only(ZeroEngineT<Real>& engine) override {
    begin_pass(0, forward_events_, engine);
  }
  void end_forward_only(ZeroEngineT<Real>&) override {
    ZM_ASSERT(next_event_ == end_event_, "the forward-only pass acquired {} of its {} events",
              next_event_, end_event_);
    for (const Slot& slot : slots_)
      ZM_ASSERT(slot.event < 0, "the forward-only pass left event {} gathered", slot.event);
    end_event_ = static_cast<int>(unit_order_.size());
  }

 private:
  struct Slot {
    TrackedBuffer<Real> buffer;
    int event = -1;  // index into unit_order_ of the event using it, -1 when free
    CommRequest gather;
  };

  // A pass over the events [first, end) of the unit order starts.
  void begin_pass(int first, int end, ZeroEngineT<Real>& engine) {
    next_event_ = first;
    next_gather_ = first;
    end_event_ = end;
    post_gathers(engine);
  }
  // Posts gathers for the next events while slots are free, in the unit order only, so that every
  // rank posts the same collectives in the same order.
  void post_gathers(ZeroEngineT<Real>& engine) {
    while (next_gather_ < end_event_ && next_gather_ <= next_event_ + prefetch_) {
      const int unit = unit_order_[static_cast<size_t>(next_gather_)].unit;
      const size_t first = unit == embedding_unit_ ? 0 : 1;
      const size_t end = unit == embedding_unit_ ? 1 : slots_.size();
      size_t index = first;
      while (index < end && slots_[index].event >= 0) ++index;
      if (index == end) return;
      Slot& slot = slots_[index];
      slot.event = next_gather_++;
      // The rank's shard, or where its tier staged it: its own place in the slot, gathered in
      // place.
      Real* place = slot.buffer.data() + engine.comm().rank() * engine.partition().unit(unit).shard;
      const Real* shard = engine.shard_source().shard(unit, place, engine);
      slot.gather =
          post_scheduled(engine.schedule().of(unit, ScheduleRole::UnitGather), engine,
                         {const_cast<Real*>(shard), slot.buffer.data(), static_cast<int>(index)});
    }
  }

  std::vector<UnitEvent> unit_order_;
  int embedding_unit_;
  std::vector<Slot> slots_;  // [0] embedding, [1..] others
  int next_event_ = 0;       // next unit_order_ entry acquire() expects
  int next_gather_ = 0;      // next unit_order_ entry without a posted gather
  int end_event_;            // the events of this pass: [0, end_event_) of unit_order_
  int forward_events_ = 0;   // the events of a forward: up to the first of its backward
  int prefetch_;
};

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

std::vector<BufferSpec> gather_slot_buffers(const Partition& partition,
                                            const ZeroOptions& options) {
  std::vector<BufferSpec> buffers;
  gather_slots(partition, options).add_to(buffers);
  return buffers;
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
