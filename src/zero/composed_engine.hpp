// The engine of one stage, composed from its record (core/stage_spec.hpp): ZeroEngineT holds the
// model state in the placements the record implies and the step's schedule, a gradient path
// (paths/gradient_path.hpp) implements the gradient hooks and a parameter path
// (paths/parameter_path.hpp) the parameter hooks. make_engine (factory.cpp) builds it; it forwards
// the hooks and adds nothing else.
#pragma once

#include <memory>
#include <vector>

#include "core/stage_spec.hpp"
#include "zero/engine.hpp"
#include "zero/paths/gradient_path.hpp"
#include "zero/paths/parameter_path.hpp"

namespace zm {

template <typename Real>
class ComposedEngine final : public ZeroEngineT<Real> {
 public:
  // Allocates the model state, then the gradient path's buffers, then the parameter path's.
  ComposedEngine(const StageSpec& spec, const Partition& partition, MeshComms& comms,
                 const ZeroOptions& options, const std::vector<UnitEvent>& unit_order,
                 kernels::TeamShape team_shape, MemoryLedger* ledger);

  const Real* acquire(UnitEvent event) override { return parameters_->acquire(event, *this); }
  void release(UnitEvent event) override { parameters_->release(event, *this); }
  Real* grads(int unit) override { return gradients_->grads(unit, *this); }
  void grads_ready(int unit) override { gradients_->unit_ready(unit, micro_step(), *this); }
  void begin_micro_step(int64_t micro, int64_t micro_steps) override;
  void finish_backward() override { gradients_->finish(*this); }
  void begin_forward_only() override { parameters_->begin_forward_only(*this); }
  void end_forward_only() override { parameters_->end_forward_only(*this); }

 private:
  MicroStep micro_step() const { return {this->micro_ == 0, this->last_micro()}; }

  // Declared in allocation order: destroyed parameter path first, as it was allocated last.
  std::unique_ptr<GradientPathT<Real>> gradients_;
  std::unique_ptr<ParameterPathT<Real>> parameters_;
};

}  // namespace zm
