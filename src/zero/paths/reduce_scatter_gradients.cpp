// GradientPath::ReduceScatterPerUnit (stage 1, P_os): full gradients accumulate over the
// micro-steps as in stage 0; on the last, each unit's gradients are reduce-scattered in place, into
// this rank's shard of them, as soon as backward completes them (the schedule's GroupReduction,
// then under hybrid sharding its ReplicaReduction). The optimizer then updates that shard.
#include "zero/paths/gradient_path.hpp"
#include "zero/schedule_execution.hpp"

namespace zm {

namespace {

template <typename Real>
class ReduceScatterGradients final : public GradientPathT<Real> {
 public:
  Real* grads(int unit, ZeroEngineT<Real>& engine) override { return engine.grad_at(unit, 0); }
  void unit_ready(int unit, MicroStep step, ZeroEngineT<Real>& engine) override;
  void finish(ZeroEngineT<Real>& engine) override {
    finish_reductions(engine);
    engine.finish_replica_reductions();
  }

 private:
  void finish_reductions(ZeroEngineT<Real>& engine);  // waits for them in posting order
  struct InFlight {
    int unit;
    CommRequest request;
    bool blocking;
  };
  std::vector<InFlight> in_flight_;
};

template <typename Real>
void ReduceScatterGradients<Real>::unit_ready(int unit, MicroStep step, ZeroEngineT<Real>& engine) {
  engine.fold_full_gradients(unit);
  if (!step.last) return;
  const ScheduledCollective& reduction = engine.schedule().of(unit, ScheduleRole::GroupReduction);
  // In place, into this rank's shard of the full gradients.
  void* shard =
      engine.reduced_grad_at(unit, engine.comm().rank() * engine.partition().unit(unit).shard);
  in_flight_.push_back(
      {unit,
       post_scheduled(reduction, engine, {engine.reduced_grad_at(unit, 0), shard}),
       reduction.blocking()});
  if (reduction.blocking()) finish_reductions(engine);
}

template <typename Real>
void ReduceScatterGradients<Real>::finish_reductions(ZeroEngineT<Real>& engine) {
  // Each unit's shard, once reduced in the group, goes on across the groups (hybrid sharding).
  for (InFlight& op : in_flight_) {
    op.request.wait(op.blocking);
    engine.post_replica_reduction(op.unit);
  }
  in_flight_.clear();
}

}  // namespace

// No buffers beyond the full gradients of the model state.
PathDeclaration reduce_scatter_gradients_declaration() {
  return {};
}

template <typename Real>
std::unique_ptr<GradientPathT<Real>> make_reduce_scatter_gradients() {
  return std::make_unique<ReduceScatterGradients<Real>>();
}

#define ZM_INSTANTIATE(R) \
  template std::unique_ptr<GradientPathT<R>> make_reduce_scatter_gradients();
ZM_FOR_EACH_REAL(ZM_INSTANTIATE)
#undef ZM_INSTANTIATE

}  // namespace zm
