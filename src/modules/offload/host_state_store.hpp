// Where the host AdamW (host_tier.cpp) finds the optimizer state of a unit: the fp32 master, Adam
// m and v of this rank's piece. By default in host memory, the engine's own buffers. Another
// module may keep them further out and bring each unit into host memory for its update: it adds
// a value of zero.offload_optimizer with a store (ZeRO-Infinity's "nvme":
// src/modules/zero_infinity/with_offload/). The engine then allocates the state in
// MemCategory::Storage (counted, no memory) and reaches it through the store; where the store
// holds parameters and zero.offload_params names it, the parameter shard likewise, and the
// gradient shard where the store's own key asks for it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/deck.hpp"
#include "core/memory.hpp"
#include "core/stage_spec.hpp"

namespace zm {

class ZeroEngine;
struct ScheduleContext;

// A unit's state in host memory: each pointer at the first element of the rank's piece.
struct HostUnitState {
  float* master = nullptr;
  float* adam_m = nullptr;
  float* adam_v = nullptr;
  // The piece's compute parameters where the store keeps them and they are not the master (bf16
  // with zero.offload_params set to the store's value): AdamW writes them here.
  void* params = nullptr;
  // The piece's reduced gradients where the store keeps the gradient shard (holds_gradients).
  const void* grads = nullptr;
};

class HostStateStore {
 public:
  virtual ~HostStateStore() = default;
  // Optimizer step `step` (the run's, 1-based) starts: AdamW asks for the units in order, each
  // once.
  virtual void begin(int64_t step) { (void)step; }
  // Unit u's state in host memory, until updated(u) hands it back.
  virtual HostUnitState fetch(int u) = 0;
  // AdamW wrote unit u's state (the store keeps it; the memory may be reused after the next
  // fetch).
  virtual void updated(int u) = 0;
  // Elements [e, e + n) of unit u's state `state` (0: master, 1: m, 2: v) to host memory `host`
  // or from it (UnitOptimizerT::copy_state: checkpoints, the initial master).
  virtual void copy_state(int state, int u, int64_t e, int64_t n, float* host, bool to_host) = 0;
  // Where the store keeps the parameter shard too (HostStoreKind::holds_params): unit u's shard of
  // compute parameters in host memory, for a gather of the unit, until the next call.
  virtual const void* fetch_shard(int u) {
    (void)u;
    return nullptr;
  }
  // Where the store keeps the gradient shard too (HostStoreKind::holds_gradients): host memory
  // for unit u's reduced gradient shard, holding what the store has of it where `read` (a later
  // micro-step adds to it), until gradients_written(u) hands it back to be kept.
  virtual void* gradients(int u, bool read) {
    (void)u, (void)read;
    return nullptr;
  }
  virtual void gradients_written(int u) { (void)u; }
};

// Makes the store of a run's engine, taking the kind's buffers() from `alloc`.
using HostStoreMaker =
    std::function<std::shared_ptr<HostStateStore>(const ZeroEngine&, PlannedAllocator&)>;

// A store's buffers (its staging in host memory) at a stage, for the planner and for the maker.
using StoreBuffers =
    std::function<std::vector<BufferSpec>(const StageSpec&, const ScheduleContext&)>;

// A value of zero.offload_optimizer that another module adds.
struct HostStoreKind {
  std::string value;  // e.g. "nvme"
  // Whether zero.offload_params may name it too: stage 3's parameter shard kept with the state
  // (the engine allocates it in MemCategory::Storage; gathers read it through fetch_shard).
  bool holds_params = false;
  // Whether the deck puts the gradient shard in the store too (where offload puts it on the
  // host: stages 2-3, one shard group); the engine then allocates it in MemCategory::Storage.
  std::function<bool(const Deck&)> holds_gradients;
  // The deck's checks of what the store needs (its own keys), where the value is set.
  std::function<void(const Deck&)> check;
  // The store's buffers with the deck's settings of the store bound (its staging's count and
  // size), once per run like the maker.
  std::function<StoreBuffers(const Deck&)> buffers;
  // The maker with the deck's settings of the store bound (once per run).
  std::function<HostStoreMaker(const Deck&)> maker;
};
void add_host_store(HostStoreKind kind);
// The store added for `value`, or nullptr ("host": the engine's buffers).
const HostStoreKind* host_store(const std::string& value);

}  // namespace zm
