// The gradient path of a stage (GradientPath, core/stage_spec.hpp): where the model's gradients
// accumulate during backward, and which collectives reduce them as backward completes each unit.
//   GradientPath::AllReduce                gradient_path.cpp      (stage 0)
//   GradientPath::ReduceScatterPerUnit     gradient_path.cpp      (stage 1)
//   GradientPath::ReduceScatterAsComplete  sharded_gradients.cpp  (stages 2 and 3)
#pragma once

#include <memory>
#include <vector>

#include "core/stage_spec.hpp"
#include "zero/engine.hpp"

namespace zm {

// Where the engine stands in the step's micro-steps when a path's hook runs.
struct MicroStep {
  bool first;  // the step's first micro-step
  bool last;   // its last: the gradients are then complete and reduced
};

// The hooks of UnitAccess and ZeroEngine that the gradient path implements; the engine
// (ComposedEngine, zero/factory.cpp) forwards them with itself as `engine`.
template <typename Real>
class GradientPathT {
 public:
  virtual ~GradientPathT() = default;
  // Where unit `unit`'s gradients accumulate (+=) during this micro-step (its full padded range).
  virtual Real* grads(int unit, ZeroEngineT<Real>& engine) = 0;
  // Every gradient contribution of `unit` for this micro-step has been added.
  virtual void unit_ready(int unit, MicroStep step, ZeroEngineT<Real>& engine) = 0;
  // Waits for every gradient collective of the step (after the last backward).
  virtual void finish(ZeroEngineT<Real>& engine) = 0;
};

// The buffers of `spec`'s gradient path beyond the model state (element sizes from the options'
// precision policy, for the planner), and the path itself for compute type Real, its buffers
// allocated (after the engine's model state) and recorded in `ledger`.
std::vector<BufferSpec> declare_gradient_path(const StageSpec& spec, const Partition& partition,
                                              const ZeroOptions& options);
template <typename Real>
std::unique_ptr<GradientPathT<Real>> make_gradient_path(const StageSpec& spec,
                                                        const Partition& partition,
                                                        const ZeroOptions& options,
                                                        MemoryLedger* ledger);

// GradientPath::ReduceScatterAsComplete (sharded_gradients.cpp).
std::vector<BufferSpec> sharded_gradient_buffers(const Partition& partition,
                                                 const ZeroOptions& options);
template <typename Real>
std::unique_ptr<GradientPathT<Real>> make_sharded_gradients(const Partition& partition,
                                                            const ZeroOptions& options,
                                                            MemoryLedger* ledger);

}  // namespace zm
