// Each GradientPath onto its component (-Wswitch names a missing case), and the component of the
// two paths that keep full gradients.
#include "zero/paths/gradient_path.hpp"

#include "zero/schedule_execution.hpp"

namespace zm {

namespace {

// GradientPath::AllReduce (stage 0) and ReduceScatterPerUnit (stage 1): full gradients accumulate
// over the micro-steps; on the last, as backward completes them, stage 0 all-reduces buckets of
// consecutive units (the schedule's Buckets, posted at a bucket's lowest unit: its units are
// contiguous from there) and stage 1 reduce-scatters each unit in place into this rank's shard
// (GroupReduction), which then goes on across the groups (ReplicaReduction, hybrid sharding).
template <typename Real>
class FullGradients final : public GradientPathT<Real> {
 public:
  explicit FullGradients(ScheduleRole role) : role_(role) {}

  Real* grads(int unit, ZeroEngineT<Real>& engine) override { return engine.grad_at(unit, 0); }
  void unit_ready(int unit, MicroStep step, ZeroEngineT<Real>& engine) override {
    engine.fold_full_gradients(unit);
    if (!step.last) return;  // accumulate locally until the step's last micro-step
    // (Before any bucket holding the unit is posted: at its lowest unit, ready after it.)
    engine.before_reduction(unit, engine.reduced_grad_at(unit, 0),
                            engine.partition().unit(unit).padded, engine.reduce_dtype());
    // Every unit has its GroupReduction; a bucket is posted at its lowest unit only.
    const ScheduledCollective* reduction = role_ == ScheduleRole::Buckets
                                               ? engine.schedule().find(unit, role_)
                                               : &engine.schedule().of(unit, role_);
    if (!reduction) return;
    const int64_t kept = role_ == ScheduleRole::GroupReduction
                             ? engine.comm().rank() * engine.partition().unit(unit).shard
                             : 0;
    void* full = engine.reduced_grad_at(unit, 0);
    in_flight_.push_back(
        {unit, post_scheduled(*reduction, engine, {full, engine.reduced_grad_at(unit, kept)}),
         reduction->blocking()});
    if (reduction->blocking()) finish_reductions(engine);
  }
  void finish(ZeroEngineT<Real>& engine) override {
    finish_reductions(engine);
    engine.finish_replica_reductions();
  }

 private:
  // Waits for them in posting order, each shard then posted across the groups.
  void finish_reductions(ZeroEngineT<Real>& engine) {
    for (InFlight& op : in_flight_) {
      op.request.wait(op.blocking);
      engine.post_replica_reduction(op.unit);
    }
    in_flight_.clear();
  }
  struct InFlight {
    int unit;
    CommRequest request;
    bool blocking;
  };
  ScheduleRole role_;
  std::vector<InFlight> in_flight_;
};

}  // namespace

std::vector<BufferSpec> declare_gradient_path(const StageSpec& spec, const Partition& partition,
                                              const ZeroOptions& options) {
  switch (spec.gradients) {
    case GradientPath::AllReduce:
    case GradientPath::ReduceScatterPerUnit:
      return {};  // the full gradients are the model state's
    case GradientPath::ReduceScatterAsComplete:
      return sharded_gradient_buffers(partition, options);
  }
  return {};
}

template <typename Real>
std::unique_ptr<GradientPathT<Real>> make_gradient_path(const StageSpec& spec,
                                                        const Partition& partition,
                                                        const ZeroOptions& options,
                                                        MemoryLedger* ledger) {
  switch (spec.gradients) {
    case GradientPath::AllReduce:
      return std::make_unique<FullGradients<Real>>(ScheduleRole::Buckets);
    case GradientPath::ReduceScatterPerUnit:
      return std::make_unique<FullGradients<Real>>(ScheduleRole::GroupReduction);
    case GradientPath::ReduceScatterAsComplete:
      return make_sharded_gradients<Real>(partition, options, ledger);
  }
  return nullptr;
}

#define ZM_INSTANTIATE(R)                                        \
  template std::unique_ptr<GradientPathT<R>> make_gradient_path( \
      const StageSpec&, const Partition&, const ZeroOptions&, MemoryLedger*);
ZM_FOR_EACH_REAL(ZM_INSTANTIATE)
#undef ZM_INSTANTIATE

}  // namespace zm
