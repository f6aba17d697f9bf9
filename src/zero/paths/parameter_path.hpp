// The parameter path of a stage (ParameterPath, core/stage_spec.hpp): where the model reads a
// unit's parameters from, and which collectives bring them there. One component per path, one
// file each:
//   ParameterPath::Replicated       replicated_parameters.cpp  (stages 0-2)
//   ParameterPath::GatheredPerUnit  gathered_parameters.cpp    (stage 3)
// parameter_path.cpp maps each path to its component.
#pragma once

#include <memory>
#include <vector>

#include "core/stage_spec.hpp"
#include "model/unit_access.hpp"
#include "zero/engine.hpp"
#include "zero/paths/path_declaration.hpp"

namespace zm {

// The hooks of UnitAccess and ZeroEngine that the parameter path implements; the engine
// (ComposedEngine, zero/composed_engine.hpp) forwards them with itself as `engine`.
template <typename Real>
class ParameterPathT {
 public:
  virtual ~ParameterPathT() = default;
  // Parameters of the event's unit (its full padded range), valid until release().
  virtual const Real* acquire(UnitEvent event, ZeroEngineT<Real>& engine) = 0;
  virtual void release(UnitEvent event, ZeroEngineT<Real>& engine) = 0;
  // A micro-step starts (after the engine's own begin_micro_step).
  virtual void begin_micro_step(ZeroEngineT<Real>& engine) = 0;
  // A forward-only pass starts between steps: the unit order's events up to the head's follow, and
  // no backward. end_forward_only: it ended, every unit it acquired released.
  virtual void begin_forward_only(ZeroEngineT<Real>& engine) = 0;
  virtual void end_forward_only(ZeroEngineT<Real>& engine) = 0;
};

// The buffers of `spec`'s parameter path, and the path itself for compute type Real,
// its buffers allocated (after the gradient path's) and recorded in `ledger`. `unit_order`: the
// order in which the model uses the units in a step (a gathering path prefetches along it).
PathDeclaration declare_parameter_path(const StageSpec& spec, const Partition& partition,
                                       const ZeroOptions& options);
template <typename Real>
std::unique_ptr<ParameterPathT<Real>> make_parameter_path(const StageSpec& spec,
                                                          const Partition& partition,
                                                          const ZeroOptions& options,
                                                          const std::vector<UnitEvent>& unit_order,
                                                          MemoryLedger* ledger);

// The components (one file each), as declare_parameter_path and make_parameter_path reach them.
PathDeclaration replicated_parameters_declaration();
template <typename Real>
std::unique_ptr<ParameterPathT<Real>> make_replicated_parameters();
PathDeclaration gathered_parameters_declaration(const Partition& partition,
                                                const ZeroOptions& options);
template <typename Real>
std::unique_ptr<ParameterPathT<Real>> make_gathered_parameters(
    const Partition& partition, const ZeroOptions& options,
    const std::vector<UnitEvent>& unit_order, MemoryLedger* ledger);

}  // namespace zm
