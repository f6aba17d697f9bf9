// Each GradientPath onto its component: the planner's view and the typed path. A new gradient
// path is a new component file and a case in each switch (-Wswitch names a missing one).
#include "zero/paths/gradient_path.hpp"

namespace zm {

PathDeclaration declare_gradient_path(const StageSpec& spec, const Partition& partition,
                                      const ZeroOptions& options, const ZeroMesh& mesh) {
  switch (spec.gradients) {
    case GradientPath::AllReduce:
      return all_reduce_gradients_declaration();
    case GradientPath::ReduceScatterPerUnit:
      return reduce_scatter_gradients_declaration();
    case GradientPath::ReduceScatterAsComplete:
      return sharded_gradients_declaration(partition, options, mesh);
  }
  return {};
}

template <typename Real>
std::unique_ptr<GradientPathT<Real>> make_gradient_path(const StageSpec& spec,
                                                        const Partition& partition,
                                                        const ZeroOptions& options,
                                                        MeshComms& comms, MemoryLedger* ledger) {
  switch (spec.gradients) {
    case GradientPath::AllReduce:
      return make_all_reduce_gradients<Real>();
    case GradientPath::ReduceScatterPerUnit:
      return make_reduce_scatter_gradients<Real>();
    case GradientPath::ReduceScatterAsComplete:
      return make_sharded_gradients<Real>(partition, options, comms, ledger);
  }
  return nullptr;
}

#define ZM_INSTANTIATE(R)                                        \
  template std::unique_ptr<GradientPathT<R>> make_gradient_path( \
      const StageSpec&, const Partition&, const ZeroOptions&, MeshComms&, MemoryLedger*);
ZM_FOR_EACH_REAL(ZM_INSTANTIATE)
#undef ZM_INSTANTIATE

}  // namespace zm
