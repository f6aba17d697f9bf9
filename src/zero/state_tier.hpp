// Where the model state lives, and how a step reaches the part that is not in device memory.
//
// The core keeps all of it on the device: parameters, gradients and optimizer state each in
// their own memory category; AdamW over the device state; each micro-step's reduced gradient shard
// summed where the reduction left it; a unit's gather reading the shard where it lies. A module
// may keep some of it in another memory (host memory, say) by giving the run a StateTier
// (zero_options.hpp), chosen once: it says where each kind of state lives and makes the engine's
// three parts below, which reach that memory (the copies between the memories are the tier's
// own, as are their figures); the planner asks it for what the step's listing and a forward-only
// pass need of those copies. The engine and its paths run the same code whatever the tier.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/memory.hpp"
#include "core/stage_spec.hpp"
#include "core/zero_mesh.hpp"

namespace zm {

template <typename Real>
class ZeroEngineT;
struct OptimizerSettings;
struct ScheduleContext;
struct ScheduledCollective;
struct ZeroOptions;

// The memory category each kind of model state is allocated in (core/memory.hpp: a category not
// on_device is host memory).
struct StateHomes {
  MemCategory params = MemCategory::Parameters;    // the compute parameters this rank holds
  MemCategory grads = MemCategory::Gradients;      // the gradients (and their fp32 sum)
  MemCategory optimizer = MemCategory::Optimizer;  // the fp32 master, Adam m and v
};

// AdamW over the units this rank updates, wherever their state lives. The engine calls begin,
// then update for every unit in order, each followed by the unit's update gather.
template <typename Real>
class UnitOptimizerT {
 public:
  virtual ~UnitOptimizerT() = default;
  virtual void begin(ZeroEngineT<Real>& /*engine*/) {}
  // Updates unit u's piece: its master, Adam m and v, and the compute parameters the engine
  // holds (where they are not their own master).
  virtual void update(int u, const OptimizerSettings& settings, ZeroEngineT<Real>& engine) = 0;
  // Elements [e, e + n) of unit u's fp32 state (0: master, 1: Adam m, 2: Adam v) to host memory
  // or from it (checkpoints, the initial master): here through the engine's buffers; an optimizer
  // keeping it in MemCategory::Storage its own way (rounding the parameters it keeps there too).
  virtual void copy_state(int state, int u, int64_t e, int64_t n, float* host, bool to_host,
                          ZeroEngineT<Real>& engine) {
    float* at = state == 0 ? engine.master_at(u, e)
                           : (state == 1 ? engine.adam_m_at(u, e) : engine.adam_v_at(u, e));
    using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
    const Kokkos::View<float*, MemSpace, Unmanaged> held(at, n);
    const Kokkos::View<float*, HostSpace, Unmanaged> copy(host, n);
    if (to_host)
      Kokkos::deep_copy(copy, held);
    else
      Kokkos::deep_copy(held, copy);
  }
};

// Where each micro-step's reduced gradient shard joins the shard (the stages that keep only the
// shard), in the memory the shard lives in. `received` is where the reduction left the sum, in
// device memory: the shard itself where it lives on the device and nothing was there before
// (place is then nothing to do), else a buffer beside it; `dst` the shard or its fp32 sum. Their
// elements are the engine's reduce type (ZeroEngineT::reduce_dtype): Real, or float under the fp32
// reduction.
template <typename Real>
class ShardHomeT {
 public:
  virtual ~ShardHomeT() = default;
  // Before a receive buffer is taken again; after backward's last unit.
  virtual void before_receive(ZeroEngineT<Real>& /*engine*/) {}
  virtual void finish(ZeroEngineT<Real>& /*engine*/) {}
  // dst = received: the first micro-step's sum (or the only one).
  virtual void place(int unit, void* dst, const void* received, int64_t n,
                     ZeroEngineT<Real>& engine) = 0;
  // dst += received.
  virtual void add(int unit, void* dst, const void* received, int64_t n,
                   ZeroEngineT<Real>& engine) = 0;
  // sum = received (first) or sum += received, in fp32; where `rounded` is given (the last
  // micro-step) the sum rounded into it too.
  virtual void accumulate(int unit, float* sum, const Real* received, Real* rounded, int64_t n,
                          bool first, ZeroEngineT<Real>& engine) = 0;
  // Unit u's reduced gradients [e, e + n) summed in squares after finish(), for the norm: read
  // where they lie; a home keeping them in no memory (Storage) sums them as they pass through it.
  virtual double sum_of_squares(int u, int64_t e, int64_t n, const ZeroEngineT<Real>& engine) {
    return engine.sum_of_squares_held(u, e, n);
  }
};

// Where a gather of unit `unit` reads this rank's shard from: the shard itself, or a copy staged
// at `place` (the shard's own place in the gather's slot, in device memory).
template <typename Real>
class ShardSourceT {
 public:
  virtual ~ShardSourceT() = default;
  virtual const Real* shard(int unit, Real* place, ZeroEngineT<Real>& engine) = 0;
};

// The engine's parts from a tier: null where it keeps the core's.
template <typename Real>
struct TierParts {
  std::unique_ptr<UnitOptimizerT<Real>> optimizer;
  std::unique_ptr<ShardHomeT<Real>> gradients;
  std::unique_ptr<ShardSourceT<Real>> parameters;
};

// What copies between the memories move: their bytes and their number.
struct CopyVolume {
  double bytes = 0;
  int64_t copies = 0;
};

// A module's memory tier for model state (one per run, from the run's options).
class StateTier {
 public:
  virtual ~StateTier() = default;
  // Where each kind of state lives at this stage on this mesh.
  virtual StateHomes homes(const StageSpec& spec, const ZeroMesh& mesh) const = 0;
  // `zeromini plan --schedule`: lines for the tier's own work on unit `unit` (its copies), given
  // the step schedule's collectives; they follow the collectives' lines.
  virtual std::vector<std::string> describe(const StageSpec& spec, const ScheduleContext& context,
                                            const std::vector<ScheduledCollective>& collectives,
                                            int unit) const = 0;
  // What one forward-only micro-batch copies between the memories (ZeroEngine::begin_forward_only;
  // e.g. a shard staged for each gather), for the planner's price of such a pass.
  virtual CopyVolume forward_only_copies(
      const StageSpec& spec, const ScheduleContext& context,
      const std::vector<ScheduledCollective>& collectives) const = 0;
  // The buffers its parts allocate (staging), for the planner and for parts().
  virtual std::vector<BufferSpec> buffers(const StageSpec& spec,
                                          const ScheduleContext& context) const = 0;
  // The engine's parts, taking buffers() from `alloc`.
  virtual TierParts<float> parts(ZeroEngineT<float>& engine, PlannedAllocator& alloc) const = 0;
#if ZEROMINI_HAVE_BF16
  virtual TierParts<bf16> parts(ZeroEngineT<bf16>& engine, PlannedAllocator& alloc) const = 0;
#endif
};

// How each micro-step's reduced sum joins a shard the path keeps, decided once from the
// precision policy and the micro-steps (zero/paths/sharded_gradients.cpp runs it; a tier that
// copies the sums elsewhere asks it too).
enum class ShardSum {
  InPlace,    // one micro-step: reduced straight into the shard
  Add,        // later micro-steps reduce beside the shard and add into it
  SumInFp32,  // mixed precision: every micro-step's sum adds to the fp32 sum (grad_sum), the
              // last writes it, rounded once, into the shard (what the replicas reduce and the
              // optimizer reads)
  Widened,    // the fp32 reduction: the bucket widened to fp32, reduced into the fp32 sum, later
              // micro-steps beside it and added; nothing is rounded back (AdamW reads the sum)
};
ShardSum shard_sum(const ZeroOptions& options);

}  // namespace zm
