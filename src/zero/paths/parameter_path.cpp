// Each ParameterPath onto its component (-Wswitch names a missing case), and the replicated one.
#include "zero/paths/parameter_path.hpp"

namespace zm {

namespace {

// ParameterPath::Replicated (stages 0-2): every rank holds every parameter, and the model reads
// them where they are. Under a sharded optimizer each rank updates only its shard of them, and
// the updated shards are all-gathered in place (the schedule's UpdateGather, posted by
// ZeroEngineT::optimizer_step).
template <typename Real>
class ReplicatedParameters final : public ParameterPathT<Real> {
 public:
  const Real* acquire(UnitEvent event, ZeroEngineT<Real>& engine) override {
    return engine.param_at(event.unit, 0);
  }
};

}  // namespace

std::vector<BufferSpec> declare_parameter_path(const StageSpec& spec, const Partition& partition,
                                               const ZeroOptions& options) {
  switch (spec.parameters) {
    case ParameterPath::Replicated:
      return {};  // the parameters are the model state's
    case ParameterPath::GatheredPerUnit:
      return gather_slot_buffers(partition, options);
  }
  return {};
}

template <typename Real>
std::unique_ptr<ParameterPathT<Real>> make_parameter_path(const StageSpec& spec,
                                                          const Partition& partition,
                                                          const ZeroOptions& options,
                                                          const std::vector<UnitEvent>& unit_order,
                                                          MemoryLedger* ledger) {
  switch (spec.parameters) {
    case ParameterPath::Replicated:
      return std::make_unique<ReplicatedParameters<Real>>();
    case ParameterPath::GatheredPerUnit:
      return make_gathered_parameters<Real>(partition, options, unit_order, ledger);
  }
  return nullptr;
}

#define ZM_INSTANTIATE(R)                                                                    \
  template std::unique_ptr<ParameterPathT<R>> make_parameter_path(                           \
      const StageSpec&, const Partition&, const ZeroOptions&, const std::vector<UnitEvent>&, \
      MemoryLedger*);
ZM_FOR_EACH_REAL(ZM_INSTANTIATE)
#undef ZM_INSTANTIATE

}  // namespace zm
