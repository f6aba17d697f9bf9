// A stage number onto its record (core/stage_spec.hpp), and the record onto the typed engine for
// the trainer and the buffer and traffic lists (untyped, priced by the options' precision) for the
// planner: the model state in the record's placements, then what its paths declare, and the
// step's schedule (zero/schedule.hpp).
#include "zero/paths/gradient_path.hpp"
#include "zero/paths/parameter_path.hpp"

namespace zm {

namespace {

// The engine of one stage: ZeroEngineT holds the model state in the placements the record implies
// and the step's schedule; the record's gradient path implements the gradient hooks and its
// parameter path the parameter hooks. It forwards the hooks and adds nothing else.
template <typename Real>
class ComposedEngine final : public ZeroEngineT<Real> {
 public:
  // Allocates the model state, then the gradient path's buffers, then the parameter path's.
  ComposedEngine(const StageSpec& spec, const Partition& partition, MeshComms& comms,
                 const ZeroOptions& options, const std::vector<UnitEvent>& unit_order,
                 kernels::TeamShape team_shape, MemoryLedger* ledger)
      : ZeroEngineT<Real>(spec, partition, comms, options, team_shape, ledger),
        gradients_(make_gradient_path<Real>(spec, partition, options, ledger)),
        parameters_(make_parameter_path<Real>(spec, partition, options, unit_order, ledger)) {}

  const Real* acquire(UnitEvent event) override { return parameters_->acquire(event, *this); }
  void release(UnitEvent event) override { parameters_->release(event, *this); }
  Real* grads(int unit) override { return gradients_->grads(unit, *this); }
  void grads_ready(int unit) override {
    gradients_->unit_ready(unit, {this->micro_ == 0, this->last_micro()}, *this);
  }
  void begin_micro_step(int64_t micro, int64_t micro_steps, bool forward_apart) override {
    ZeroEngineT<Real>::begin_micro_step(micro, micro_steps);
    parameters_->begin_micro_step(*this, forward_apart);
  }
  void finish_backward() override { gradients_->finish(*this); }
  void begin_forward_only() override { parameters_->begin_forward_only(*this); }
  void end_forward_only() override { parameters_->end_forward_only(*this); }

 private:
  // Declared in allocation order: destroyed parameter path first, as it was allocated last.
  std::unique_ptr<GradientPathT<Real>> gradients_;
  std::unique_ptr<ParameterPathT<Real>> parameters_;
};

}  // namespace

template <typename Real>
std::unique_ptr<ZeroEngineT<Real>> make_engine(int stage, const Partition& partition,
                                               MeshComms& comms, const ZeroOptions& options,
                                               const std::vector<UnitEvent>& unit_order,
                                               kernels::TeamShape team_shape,
                                               MemoryLedger* ledger) {
  return std::make_unique<ComposedEngine<Real>>(stage_spec(stage), partition, comms, options,
                                                unit_order, team_shape, ledger);
}

#define ZM_INSTANTIATE(R)                                                                   \
  template std::unique_ptr<ZeroEngineT<R>> make_engine(                                     \
      int, const Partition&, MeshComms&, const ZeroOptions&, const std::vector<UnitEvent>&, \
      kernels::TeamShape, MemoryLedger*);
ZM_FOR_EACH_REAL(ZM_INSTANTIATE)
#undef ZM_INSTANTIATE

std::vector<BufferSpec> ZeroEngine::declared_buffers(int stage, const Partition& partition,
                                                     const ZeroOptions& options,
                                                     const ZeroMesh& mesh) {
  const StageSpec& spec = stage_spec(stage);
  std::vector<BufferSpec> buffers =
      model_state_buffers(partition, options, mesh.placements(spec), mesh);
  const StepSchedule schedule = build_step_schedule(spec, partition, options, mesh);
  std::vector<std::vector<BufferSpec>> parts = {schedule.strategy_buffers()};
  if (options.tier)
    parts.push_back(options.tier->buffers(spec, schedule_context(spec, partition, options, mesh)));
  parts.push_back(declare_gradient_path(spec, partition, options));
  parts.push_back(declare_parameter_path(spec, partition, options));
  for (const std::vector<BufferSpec>& part : parts)
    buffers.insert(buffers.end(), part.begin(), part.end());
  return buffers;
}

PlannedCollectives ZeroEngine::declared_traffic(int stage, const Partition& partition,
                                                const ZeroOptions& options, const ZeroMesh& mesh) {
  return build_step_schedule(stage_spec(stage), partition, options, mesh).planned();
}

}  // namespace zm
