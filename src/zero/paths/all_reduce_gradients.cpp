// GradientPath::AllReduce (stage 0, plain data parallelism): full gradients accumulate over the
// micro-steps; on the last, buckets of consecutive units (the schedule's Buckets) are all-reduced
// as backward completes them, overlapped with the rest of backward.
#include "zero/paths/gradient_path.hpp"
#include "zero/schedule_execution.hpp"

namespace zm {

namespace {

template <typename Real>
class AllReduceGradients final : public GradientPathT<Real> {
 public:
  Real* grads(int unit, ZeroEngineT<Real>& engine) override { return engine.grad_at(unit, 0); }
  void unit_ready(int unit, MicroStep step, ZeroEngineT<Real>& engine) override;
  void finish(ZeroEngineT<Real>&) override {
    for (CommRequest& request : in_flight_) request.wait();
    in_flight_.clear();
  }

 private:
  std::vector<CommRequest> in_flight_;
};

template <typename Real>
void AllReduceGradients<Real>::unit_ready(int unit, MicroStep step, ZeroEngineT<Real>& engine) {
  engine.fold_full_gradients(unit);
  if (!step.last) return;  // accumulate locally until the step's last micro-step
  // The bucket whose lowest unit this is: its units are contiguous in the padded buffer.
  const ScheduledCollective* bucket = engine.schedule().find(unit, ScheduleRole::Buckets);
  if (!bucket) return;
  void* grads = engine.reduced_grad_at(unit, 0);
  in_flight_.push_back(post_scheduled(*bucket, engine, {grads, grads}));
  if (bucket->blocking()) in_flight_.back().wait(true);
}

}  // namespace

// No buffers beyond the full gradients of the model state.
PathDeclaration all_reduce_gradients_declaration() {
  return {};
}

template <typename Real>
std::unique_ptr<GradientPathT<Real>> make_all_reduce_gradients() {
  return std::make_unique<AllReduceGradients<Real>>();
}

#define ZM_INSTANTIATE(R) template std::unique_ptr<GradientPathT<R>> make_all_reduce_gradients();
ZM_FOR_EACH_REAL(ZM_INSTANTIATE)
#undef ZM_INSTANTIATE

}  // namespace zm
