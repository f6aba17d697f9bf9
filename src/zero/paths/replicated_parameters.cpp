// ParameterPath::Replicated (stages 0-2): every rank holds every parameter, and the model reads
// them where they are. Under a sharded optimizer each rank updates only its shard of them, and
// the updated shards are all-gathered in place (ZeroEngineT::after_unit_update).
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
};

}  // namespace

// Per unit and step under a sharded optimizer: one all-gather of the updated shard. No buffers
// beyond the parameters of the model state.
PathDeclaration replicated_parameters_declaration(const StageSpec& spec) {
  PathDeclaration out;
  if (spec.optimizer == OptimizerPartition::Sharded) out.gathers_per_unit = 1;
  return out;
}

template <typename Real>
std::unique_ptr<ParameterPathT<Real>> make_replicated_parameters() {
  return std::make_unique<ReplicatedParameters<Real>>();
}

template std::unique_ptr<ParameterPathT<float>> make_replicated_parameters();
#if ZEROMINI_HAVE_BF16
template std::unique_ptr<ParameterPathT<bf16>> make_replicated_parameters();
#endif

}  // namespace zm
