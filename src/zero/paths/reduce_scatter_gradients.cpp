// GradientPath::ReduceScatterPerUnit (stage 1, P_os): full gradients accumulate over the
// micro-steps as in stage 0; on the last, each unit's gradients are reduce-scattered in place, into
// this rank's shard of them, as soon as backward completes them. The optimizer then updates that
// shard. Under qgZ (zero.quantize_grads) each unit's reduction is the quantized exchange of
// zero/quantized_gradients.hpp instead, within the group and then across the groups.
#include "zero/paths/gradient_path.hpp"
#include "zero/quantized_gradients.hpp"

namespace zm {

namespace {

template <typename Real>
class ReduceScatterGradients final : public GradientPathT<Real> {
 public:
  ReduceScatterGradients(const Partition& partition, const Deck& deck, MeshComms& comms,
                         MemoryLedger* ledger)
      : overlap_(deck.zero.overlap) {
    PlannedAllocator alloc(quantized_gradient_buffers(partition, deck, comms.mesh()), ledger);
    if (deck.zero.quantizes_grads())
      qgz_ = std::make_unique<QuantizedGradients>(partition, deck, alloc, comms.world().rank());
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
  };
  std::vector<InFlight> in_flight_;
  bool overlap_;
  std::unique_ptr<QuantizedGradients> qgz_;  // under qgZ
};

template <typename Real>
void ReduceScatterGradients<Real>::unit_ready(int unit, MicroStep step, ZeroEngineT<Real>& engine) {
  engine.fold_full_gradients(unit);
  if (!step.last) return;
  const UnitPartition& p = engine.partition().unit(unit);
  if (qgz_) {  // blocking: in place into this rank's shard, then across the groups
    reduce_grads_in_group(*qgz_, engine, unit, engine.reduced_grad_at(unit, 0),
                          engine.reduced_grad_at(unit, engine.comm().rank() * p.shard));
    reduce_grads_across(*qgz_, engine, unit);
    return;
  }
  in_flight_.push_back({unit, engine.comm().ireduce_scatter_sum(
                                  engine.reduced_grad_at(unit, 0),
                                  engine.reduced_grad_at(unit, engine.comm().rank() * p.shard),
                                  static_cast<size_t>(p.shard), engine.reduce_dtype(),
                                  {unit, CommPurpose::GradReduce})});
  if (!overlap_) finish_reductions(engine);  // no overlap: blocking
}

template <typename Real>
void ReduceScatterGradients<Real>::finish_reductions(ZeroEngineT<Real>& engine) {
  // Each unit's shard, once reduced in the group, goes on across the groups (hybrid sharding).
  for (auto& [unit, request] : in_flight_) {
    request.wait(!overlap_);
    engine.post_replica_reduction(unit);
  }
  in_flight_.clear();
}

}  // namespace

// Per unit and step: one reduce-scatter after the last micro-step's backward; no buffers beyond
// the full gradients of the model state, but qgZ's.
PathDeclaration reduce_scatter_gradients_declaration(const Partition& partition, const Deck& deck,
                                                     const ZeroMesh& mesh) {
  PathDeclaration out;
  out.buffers = quantized_gradient_buffers(partition, deck, mesh);
  out.reductions_per_unit = 1;
  return out;
}

template <typename Real>
std::unique_ptr<GradientPathT<Real>> make_reduce_scatter_gradients(const Partition& partition,
                                                                   const Deck& deck,
                                                                   MeshComms& comms,
                                                                   MemoryLedger* ledger) {
  return std::make_unique<ReduceScatterGradients<Real>>(partition, deck, comms, ledger);
}

template std::unique_ptr<GradientPathT<float>> make_reduce_scatter_gradients(const Partition&,
                                                                             const Deck&,
                                                                             MeshComms&,
                                                                             MemoryLedger*);
#if ZEROMINI_HAVE_BF16
template std::unique_ptr<GradientPathT<bf16>> make_reduce_scatter_gradients(const Partition&,
                                                                            const Deck&, MeshComms&,
                                                                            MemoryLedger*);
#endif

}  // namespace zm
