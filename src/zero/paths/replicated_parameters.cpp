// ParameterPath::Replicated (stages 0-2): every rank holds every parameter, and the model reads
// them where they are. Under a sharded optimizer each rank updates only its shard of them, and
// the updated shards are all-gathered in place (the schedule's UpdateGather, posted by
// ZeroEngineT::after_unit_update).
#include "zero/paths/parameter_path.hpp"

namespace zm {

namespace {

template <typename Real>
class ReplicatedParameters final : public ParameterPathT<Real> {
 public:
  // Resident parameters: the unit's own, nothing to gather or release.
  const Real* acquire(UnitEvent event, ZeroEngineT<Real>& engine) override {
    return engine.param_at(event.unit, 0);
  }
  void release(UnitEvent, ZeroEngineT<Real>&) override {}
  void begin_micro_step(ZeroEngineT<Real>&) override {}
  void begin_forward_only(ZeroEngineT<Real>&) override {}
  void end_forward_only(ZeroEngineT<Real>&) override {}
};

}  // namespace

// No buffers beyond the parameters of the model state.
PathDeclaration replicated_parameters_declaration() {
  return {};
}

template <typename Real>
std::unique_ptr<ParameterPathT<Real>> make_replicated_parameters() {
  return std::make_unique<ReplicatedParameters<Real>>();
}

#define ZM_INSTANTIATE(R) template std::unique_ptr<ParameterPathT<R>> make_replicated_parameters();
ZM_FOR_EACH_REAL(ZM_INSTANTIATE)
#undef ZM_INSTANTIATE

}  // namespace zm
