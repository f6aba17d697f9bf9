// The gradient path of a stage (GradientPath, core/stage_spec.hpp): where the model's gradients
// accumulate during backward, and which collectives reduce them as backward completes each unit.
// One component per path, one file each:
//   GradientPath::AllReduce                all_reduce_gradients.cpp     (stage 0)
//   GradientPath::ReduceScatterPerUnit     reduce_scatter_gradients.cpp (stage 1)
//   GradientPath::ReduceScatterAsComplete  sharded_gradients.cpp        (stages 2 and 3)
// gradient_path.cpp maps each path to its component.
#pragma once

#include <memory>

#include "core/stage_spec.hpp"
#include "zero/engine.hpp"
#include "zero/paths/path_declaration.hpp"

namespace zm {

// Where the engine stands in the step's micro-steps when a path's hook runs.
struct MicroStep {
  bool first;  // the step's first micro-step
  bool last;   // its last: the gradients are then complete and reduced
};

// The hooks of UnitAccess and ZeroEngine that the gradient path implements; the engine
// (ComposedEngine, zero/composed_engine.hpp) forwards them with itself as `engine`.
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

// The buffers of `spec`'s gradient path, and the path itself for compute type Real,
// its buffers allocated (after the engine's model state) and recorded in `ledger`.
// `mesh` / `comms`: the run's (a strategy may size its exchanges across the groups by them).
PathDeclaration declare_gradient_path(const StageSpec& spec, const Partition& partition,
                                      const ZeroOptions& options, const ZeroMesh& mesh);
template <typename Real>
std::unique_ptr<GradientPathT<Real>> make_gradient_path(const StageSpec& spec,
                                                        const Partition& partition,
                                                        const ZeroOptions& options,
                                                        MeshComms& comms, MemoryLedger* ledger);

// The components (one file each), as declare_gradient_path and make_gradient_path reach them.
PathDeclaration all_reduce_gradients_declaration();
template <typename Real>
std::unique_ptr<GradientPathT<Real>> make_all_reduce_gradients();
PathDeclaration reduce_scatter_gradients_declaration();
template <typename Real>
std::unique_ptr<GradientPathT<Real>> make_reduce_scatter_gradients();
PathDeclaration sharded_gradients_declaration(const Partition& partition,
                                              const ZeroOptions& options, const ZeroMesh& mesh);
template <typename Real>
std::unique_ptr<GradientPathT<Real>> make_sharded_gradients(const Partition& partition,
                                                            const ZeroOptions& options,
                                                            MeshComms& comms, MemoryLedger* ledger);

}  // namespace zm
