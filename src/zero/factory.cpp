// A stage number onto its record (core/stage_spec.hpp), and the record onto the typed engine for
// the trainer and the buffer and traffic lists (untyped, priced by the options' precision) for the
// planner: the model state in the record's placements, then what its paths declare, and the
// step's schedule (zero/schedule.hpp).
#include "core/error.hpp"
#include "zero/composed_engine.hpp"

namespace zm {

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
  for (const BufferSpec& buffer : schedule.strategy_buffers()) buffers.push_back(buffer);
  if (options.tier)
    for (const BufferSpec& buffer :
         options.tier->buffers(spec, schedule_context(spec, partition, options, mesh)))
      buffers.push_back(buffer);
  for (const PathDeclaration& path : {declare_gradient_path(spec, partition, options, mesh),
                                      declare_parameter_path(spec, partition, options)})
    buffers.insert(buffers.end(), path.buffers.begin(), path.buffers.end());
  return buffers;
}

PlannedCollectives ZeroEngine::declared_traffic(int stage, const Partition& partition,
                                                const ZeroOptions& options, const ZeroMesh& mesh) {
  return build_step_schedule(stage_spec(stage), partition, options, mesh).planned();
}

}  // namespace zm
