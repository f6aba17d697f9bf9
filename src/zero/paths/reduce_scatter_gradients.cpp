// GradientPath::ReduceScatterPerUnit (stage 1, P_os): full gradients accumulate over the
// micro-steps as in stage 0; on the last, each unit's gradients are reduce-scattered in place, into
// this rank's shard of them, as soon as backward completes them (the schedule's GroupReduction,
// then under hybrid sharding its ReplicaReduction). The optimizer then updates that shard. Under
// qgZ (zero.quantize_grads) the schedule's strategies are the quantized exchanges of
// zero/quantized_gradients.hpp, whose state the path keeps.
#include "zero/paths/gradient_path.hpp"
#include "zero/quantized_gradients.hpp"
#include "zero/schedule_execution.hpp"

namespace zm {

namespace {

template <typename Real>
class ReduceScatterGradients final : public GradientPathT<Real> {
 public:
  ReduceScatterGradients(const Partition& partition, const ZeroOptions& options, MeshComms& comms,
                         MemoryLedger* ledger) {
    PlannedAllocator alloc(quantized_gradient_buffers(partition, options, comms.mesh()), ledger);
    if (options.quantize_grads)
      qgz_ = std::make_unique<QuantizedGradients>(partition, options, alloc, comms.world().rank());
    alloc.finish();
  }

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
  std::unique_ptr<QuantizedGradients> qgz_;  // under qgZ
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
       post_scheduled(reduction, engine, {engine.reduced_grad_at(unit, 0), shard, qgz_.get()}),
       reduction.blocking()});
  if (reduction.blocking()) finish_reductions(engine);
}

template <typename Real>
void ReduceScatterGradients<Real>::finish_reductions(ZeroEngineT<Real>& engine) {
  // Each unit's shard, once reduced in the group, goes on across the groups (hybrid sharding).
  for (InFlight& op : in_flight_) {
    op.request.wait(op.blocking);
    engine.post_replica_reduction(op.unit, qgz_.get());
  }
  in_flight_.clear();
}

}  // namespace

// No buffers beyond the full gradients of the model state, but qgZ's.
PathDeclaration reduce_scatter_gradients_declaration(const Partition& partition,
                                                     const ZeroOptions& options,
                                                     const ZeroMesh& mesh) {
  return {quantized_gradient_buffers(partition, options, mesh)};
}

template <typename Real>
std::unique_ptr<GradientPathT<Real>> make_reduce_scatter_gradients(const Partition& partition,
                                                                   const ZeroOptions& options,
                                                                   MeshComms& comms,
                                                                   MemoryLedger* ledger) {
  return std::make_unique<ReduceScatterGradients<Real>>(partition, options, comms, ledger);
}

template std::unique_ptr<GradientPathT<float>> make_reduce_scatter_gradients(const Partition&,
                                                                             const ZeroOptions&,
                                                                             MeshComms&,
                                                                             MemoryLedger*);
#if ZEROMINI_HAVE_BF16
template std::unique_ptr<GradientPathT<bf16>> make_reduce_scatter_gradients(const Partition&,
                                                                            const ZeroOptions&,
                                                                            MeshComms&,
                                                                            MemoryLedger*);
#endif

}  // namespace zm
