// Each ParameterPath onto its component: the planner's view and the typed path. A new parameter
// path is a new component file and a case in each switch (-Wswitch names a missing one).
#include "zero/paths/parameter_path.hpp"

namespace zm {

PathDeclaration declare_parameter_path(const StageSpec& spec, const Partition& partition,
                                       const ZeroOptions& options) {
  switch (spec.parameters) {
    case ParameterPath::Replicated:
      return replicated_parameters_declaration();
    case ParameterPath::GatheredPerUnit:
      return gathered_parameters_declaration(partition, options);
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
      return make_replicated_parameters<Real>();
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
