#include "zero/composed_engine.hpp"

namespace zm {

template <typename Real>
ComposedEngine<Real>::ComposedEngine(const StageSpec& spec, const Partition& partition,
                                     MeshComms& comms, const ZeroOptions& options,
                                     const std::vector<UnitEvent>& unit_order,
                                     kernels::TeamShape team_shape, MemoryLedger* ledger)
    : ZeroEngineT<Real>(spec, partition, comms, options, team_shape, ledger),
      gradients_(make_gradient_path<Real>(spec, partition, options, comms, ledger)),
      parameters_(make_parameter_path<Real>(spec, partition, options, unit_order, ledger)) {}

template <typename Real>
void ComposedEngine<Real>::begin_micro_step(int64_t micro, int64_t micro_steps) {
  ZeroEngineT<Real>::begin_micro_step(micro, micro_steps);
  parameters_->begin_micro_step(*this);
}

#define ZM_INSTANTIATE(R) template class ComposedEngine<R>;
ZM_FOR_EACH_REAL(ZM_INSTANTIATE)
#undef ZM_INSTANTIATE

}  // namespace zm
