// The parameter path of a stage (ParameterPath, core/stage_spec.hpp): where the model reads a
// unit's parameters from, and which collectives bring them there.
//   ParameterPath::Replicated       parameter_path.cpp         (stages 0-2)
//   ParameterPath::GatheredPerUnit  gathered_parameters.cpp    (stage 3)
#pragma once

#include <memory>
#include <vector>

#include "core/stage_spec.hpp"
#include "model/unit_access.hpp"
#include "zero/engine.hpp"

namespace zm {

// The hooks of UnitAccess and ZeroEngine that the parameter path implements; the engine
// (ComposedEngine, zero/factory.cpp) forwards them with itself as `engine`.
template <typename Real>
class ParameterPathT {
 public:
  virtual ~ParameterPathT() = default;
  // Parameters of the event's unit (its full padded range), valid until release().
  virtual const Real* acquire(UnitEvent event, ZeroEngineT<Real>& engine) = 0;
  virtual void release(UnitEvent /*event*/, ZeroEngineT<Real>& /*engine*/) {}
  // A micro-step starts (after the engine's own begin_micro_step; ZeroEngine::begin_micro_step
  // says what `forward_apart` means).
  virtual void begin_micro_step(ZeroEngineT<Real>& /*engine*/, bool /*forward_apart*/) {}
  // A forward-only pass starts between steps: the unit order's events up to the head's follow, and
  // no backward. end_forward_only: it ended, every unit it acquired released.
  virtual void begin_forward_only(ZeroEngineT<Real>& /*engine*/) {}
  virtual void end_forward_only(ZeroEngineT<Real>& /*engine*/) {}
};

// The buffers of `spec`'s parameter path beyond the model state, and the path itself for compute
// type Real, its buffers allocated (after the gradient path's) and recorded in `ledger`.
// `unit_order`: the order in which the model uses the units in a step (a gathering path prefetches
// along it).
std::vector<BufferSpec> declare_parameter_path(const StageSpec& spec, const Partition& partition,
                                               const ZeroOptions& options);
template <typename Real>
std::unique_ptr<ParameterPathT<Real>> make_parameter_path(const StageSpec& spec,
                                                          const Partition& partition,
                                                          const ZeroOptions& options,
                                                          const std::vector<UnitEvent>& unit_order,
                                                          MemoryLedger* ledger);

// ParameterPath::GatheredPerUnit (gathered_parameters.cpp): its gather slots, and the path.
std::vector<BufferSpec> gather_slot_buffers(const Partition& partition, const ZeroOptions& options);
template <typename Real>
std::unique_ptr<ParameterPathT<Real>> make_gathered_parameters(
    const Partition& partition, const ZeroOptions& options,
    const std::vector<UnitEvent>& unit_order, MemoryLedger* ledger);

}  // namespace zm
