#include "train/trainer_typed.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/error.hpp"
#include "core/timer.hpp"
#include "core/trace.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/matmul.hpp"
#include "zero/run_plan.hpp"

namespace zm {

int64_t Trainer::tokens_per_rank_per_step() const {
  const Deck& d = deck();
  return d.train.micro_batch * d.model.seq_len * d.train.grad_accum;
}

namespace {
constexpr double kPi = 3.14159265358979323846;

// Linear warmup over train.warmup steps, then cosine decay to lr * min_lr_ratio at the last step.
double learning_rate(const TrainConfig& t, int64_t step) {
  if (step < t.warmup) return t.lr * static_cast<double>(step + 1) / static_cast<double>(t.warmup);
  const double min_lr = t.lr * t.min_lr_ratio;
  const int64_t decay_steps = std::max<int64_t>(1, t.steps - t.warmup);
  const double progress =
      std::min(1.0, static_cast<double>(step - t.warmup) / static_cast<double>(decay_steps));
  return min_lr + 0.5 * (t.lr - min_lr) * (1.0 + std::cos(kPi * progress));
}

// torch.nn.utils.clip_grad_norm_ (scale by max_norm / (norm + 1e-6), never above 1) and the
// mean over micro-batches, folded into the AdamW settings of step `step` (0-based).
OptimizerSettings optimizer_settings(const TrainConfig& t, const StepRecord& record,
                                     double micro_batches, int64_t step) {
  double clip = 1.0;
  if (t.grad_clip > 0) clip = std::min(1.0, t.grad_clip / (record.grad_norm + 1e-6));
  OptimizerSettings settings;
  settings.lr = static_cast<float>(record.lr);
  settings.beta1 = static_cast<float>(t.beta1);
  settings.beta2 = static_cast<float>(t.beta2);
  settings.eps = static_cast<float>(t.eps);
  settings.weight_decay = static_cast<float>(t.weight_decay);
  settings.grad_scale = static_cast<float>(clip / micro_batches);
  settings.step = step + 1;
  return settings;
}

// The collectives between two snapshots of a communicator's statistics.
CommStats stats_between(const CommStats& before, const CommStats& after) {
  CommStats out;
  for (int op = 0; op < kCommOps; ++op) {
    out.ops[op].calls = after.ops[op].calls - before.ops[op].calls;
    out.ops[op].bytes = after.ops[op].bytes - before.ops[op].bytes;
    out.ops[op].seconds = after.ops[op].seconds - before.ops[op].seconds;
  }
  return out;
}

}  // namespace

std::unique_ptr<Trainer> make_trainer(const Deck& deck, int stage, Communicator& comm) {
  if (deck.train.policy().compute == Element::FP32)
    return std::make_unique<TrainerT<float>>(deck, stage, comm);
#if ZEROMINI_HAVE_BF16
  return std::make_unique<TrainerT<bf16>>(deck, stage, comm);
#else
  fail("train.precision = \"{}\": this build has no bfloat16 type (it needs Kokkos >= 4)",
       precision_name(deck.train.precision));
#endif
}

template <typename Real>
TrainerT<Real>::TrainerT(const Deck& deck, int stage, Communicator& comm)
    : deck_(deck),
      comm_(&comm),
      layout_(deck.model),
      comms_(std::make_unique<ShardGroupComms>(comm, run_shard_layout(deck, stage, comm))),
      plan_(layout_, comms_->layout().group, comms_->layout().sub_shards()),
      engine_(make_engine<Real>(stage, plan_, *comms_, deck_, gpt_schedule(layout_))),
      model_(layout_, deck.train.micro_batch, deck.model.seq_len, deck.train.policy().gemm_math),
      data_(make_data_source(deck)) {
  comms_->set_timeout(deck.comm.timeout_s);
  PlannedAllocator alloc({step_stats_buffer()});
  stats_ = alloc.take<float>("step_stats");
  alloc.finish();
  const size_t tokens = static_cast<size_t>(deck.train.micro_batch * deck.model.seq_len);
  host_inputs_.resize(tokens);
  host_targets_.resize(tokens);
}

template <typename Real>
void TrainerT<Real>::init_parameters() {
  engine_->init_parameters(static_cast<uint64_t>(deck_.train.seed));
}

template <typename Real>
double TrainerT<Real>::forward_backward(int64_t step, Fault fault, StepTimes& times) {
  const int64_t B = deck_.train.micro_batch, accum = deck_.train.grad_accum;
  double loss_sum = 0.0;
  for (int64_t micro = 0; micro < accum; ++micro) {
    engine_->begin_micro_step(micro, accum);
    data_->sequences(first_sequence(step, micro, accum, comm_->size(), comm_->rank(), B), B,
                     host_inputs_.data(), host_targets_.data());
    const Batch batch = model_.upload(host_inputs_.data(), host_targets_.data());
    Tracer::get().set_micro(micro);

    double start = wall_seconds();
    {
      ProfileRegion region("forward");
      loss_sum += model_.forward(*engine_, batch);
      Kokkos::fence();
    }
    times.forward += wall_seconds() - start;

    start = wall_seconds();
    {
      ProfileRegion region("backward");
      model_.backward(*engine_, batch);
      if (micro + 1 == accum) {
        TraceScope scope(TraceKind::Compute, "finish_backward");
        engine_->finish_backward();
      }
      if (micro + 1 == accum && fault == Fault::NaN) engine_->poison_gradient();
      Kokkos::fence();
    }
    times.backward += wall_seconds() - start;
  }
  return loss_sum;
}

template <typename Real>
void TrainerT<Real>::reduce_step_stats(double loss_sum, double micro_batches, StepRecord& record) {
  // Global loss and gradient norm in one small all-reduce: every stage sums the squares of the
  // gradients each rank owns, so that the norm is computed the same way whatever the stage.
  const double sumsq = engine_->grad_sumsq_owned();
  auto stats_host = Kokkos::create_mirror_view(stats_.view());
  stats_host(0) = static_cast<float>(loss_sum);
  stats_host(1) = static_cast<float>(sumsq);
  Kokkos::deep_copy(stats_.view(), stats_host);
  comm_->all_reduce_sum(stats_.data(), kStepStatsCount, DType::F32, {-1, CommPurpose::Stats});
  Kokkos::deep_copy(stats_host, stats_.view());
  record.loss = static_cast<double>(stats_host(0)) / micro_batches;
  record.grad_norm = std::sqrt(static_cast<double>(stats_host(1))) / micro_batches;
  record.finite = std::isfinite(record.loss) && std::isfinite(record.grad_norm);
}

template <typename Real>
StepRecord TrainerT<Real>::step(int64_t step) {
  const TrainConfig& t = deck_.train;
  const CommStats comm_before = comms_->stats();
  const CommStats inter_before = comms_->stats(CommLevel::InterGroup);
  StepRecord record;
  record.step = step;
  record.lr = learning_rate(t, step);

  const Fault fault = injected_fault(comm_->rank(), step);
  if (fault == Fault::Kill || fault == Fault::Stall) enact_fault(fault);

  comms_->begin_step_records();  // fences
  Tracer::get().begin_step(engine_->stage(), step + 1);
  const double step_start = wall_seconds();
  double optimizer_start = 0.0;
  {
    TraceScope step_scope(TraceKind::Step, "step", -1, fmt::format("step {}", step + 1));
    const double loss_sum = forward_backward(step, fault, record.times);

    optimizer_start = wall_seconds();
    const double micro_batches = static_cast<double>(comm_->size() * t.grad_accum);
    {
      TraceScope scope(TraceKind::Compute, "grad_stats");
      reduce_step_stats(loss_sum, micro_batches, record);
    }
    TraceScope scope(TraceKind::Compute, "optimizer");
    if (record.finite) engine_->optimizer_step(optimizer_settings(t, record, micro_batches, step));
  }
  Kokkos::fence();
  const double end = wall_seconds();
  record.times.optimizer = end - optimizer_start;
  record.times.total = end - step_start;

  record.comm = stats_between(comm_before, comms_->stats());
  record.comm_inter_group = stats_between(inter_before, comms_->stats(CommLevel::InterGroup));
  record.times.comm_wait = record.comm.total().seconds;
  const std::vector<CollectiveTimes> collectives = comms_->end_step_records();
  record.exposure = exposure_of(collectives);
  add_to_trace(collectives);
  Tracer::get().resolve_stamps();
  return record;
}

template class TrainerT<float>;
#if ZEROMINI_HAVE_BF16
template class TrainerT<bf16>;
#endif

}  // namespace zm
