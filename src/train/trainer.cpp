#include "train/trainer_typed.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/error.hpp"
#include "core/fault_points.hpp"
#include "core/registry.hpp"
#include "core/stage_spec.hpp"
#include "core/validate.hpp"
#include "plan/run_declarations.hpp"
#include "plan/run_extensions.hpp"
#include "plan/run_options.hpp"
#include "zero/schedule_execution.hpp"

namespace zm {

double Trainer::tokens_per_rank_per_step() const {
  const Deck& d = deck();
  return static_cast<double>(d.train.micro_batch * d.model.seq_len * d.train.grad_accum) /
         static_cast<double>(model_parallel_size(d));
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

// The run's communicators on its mesh at `stage`, with those the strategies add, once the deck is
// validated for it (core/validate.hpp): a trainer made directly (tests, benchmarks) refuses what
// `zeromini run` refuses. Collective.
std::unique_ptr<MeshComms> prepared_comms(const Deck& deck, int stage, Communicator& comm) {
  const int ranks_per_node = run_ranks_per_node(deck, comm);
  validate(deck, {stage, comm.size(), ranks_per_node});
  auto comms =
      std::make_unique<MeshComms>(comm, zero_mesh(deck, stage, comm.size(), ranks_per_node));
  for (const auto& provider : run_extensions(deck, stage).strategies) provider->prepare(*comms);
  return comms;
}

// This rank's part of a model held in parts: its coordinate along their dimension (0: whole).
int rank_part(const Deck& deck, int stage, const MeshComms& comms) {
  const std::string parts = run_extensions(deck, stage).part_dimension;
  return parts.empty() ? 0 : comms.mesh().mesh.coordinate(comms.world().rank(), parts);
}

}  // namespace

ZM_REGISTRY(MicroStepDriverMaker, add_micro_step_driver, micro_step_driver_makers)

std::unique_ptr<MicroStepDriver> make_micro_step_driver(const Deck& deck, int stage) {
  for (const MicroStepDriverMaker& make : micro_step_driver_makers())
    if (auto driver = make(deck, stage)) return driver;
  return nullptr;
}

std::unique_ptr<Trainer> make_trainer(const Deck& deck, int stage, Communicator& comm,
                                      const RunContext& context, kernels::TeamShape team_shape) {
  if (deck.train.policy().compute == Element::FP32)
    return std::make_unique<TrainerT<float>>(deck, stage, comm, context, team_shape);
#if ZEROMINI_HAVE_BF16
  return std::make_unique<TrainerT<bf16>>(deck, stage, comm, context, team_shape);
#else
  fail("train.precision = \"{}\": this build has no bfloat16 type (it needs Kokkos >= 4)",
       precision_name(deck.train.precision));
#endif
}

template <typename Real>
TrainerT<Real>::TrainerT(const Deck& deck, int stage, Communicator& comm, const RunContext& context,
                         kernels::TeamShape team_shape)
    : deck_(deck),
      context_(context),
      comm_(&comm),
      comms_(prepared_comms(deck, stage, comm)),
      layout_(run_layout(deck, stage, rank_part(deck, stage, *comms_))),
      partition_(layout_, comms_->mesh().group_ranks(), comms_->mesh().sub_shards()),
      engine_(make_engine<Real>(
          stage, partition_, *comms_,
          zero_options(deck, stage, comms_->mesh(), rank_part(deck, stage, *comms_)),
          gpt_unit_order(layout_), team_shape, context.ledger)),
      extensions_(run_extensions(deck, stage)),
      model_(layout_, deck.train.micro_batch, deck.model.seq_len, context,
             deck.train.policy().gemm_math, team_shape, model_parallel_group(),
             attention_kernels(extensions_), extensions_.checkpoints.get()),
      data_(make_data_source(deck, extensions_.reserved_data_tail)),
      driver_(make_micro_step_driver(deck, stage)) {
  comms_->set_timeout(deck.comm.timeout_s);
  PlannedAllocator alloc({step_stats_buffer(layout_)}, context.ledger);
  stats_ = alloc.take<float>("step_stats");
  alloc.finish();
  const size_t tokens = static_cast<size_t>(deck.train.micro_batch * deck.model.seq_len);
  host_inputs_.resize(tokens);
  host_targets_.resize(tokens);
  if (layout_.embeds() && holds_token_grads(stage_spec(stage), deck.train.grad_accum)) {
    held_tokens_ = std::make_unique<HeldTokenGrads<Real>>(layout_.vocab_rows(), deck.model.dim,
                                                          context.ledger);
    model_.hold_token_grads(held_tokens_->wte());
    const int embedding = layout_.embedding_unit();
    const int64_t wte = layout_.wte_offset();
    engine_->set_before_reduction([this, embedding, wte](int unit, void* grads, int64_t, DType t) {
      if (unit == embedding)
        held_tokens_->add_to(model_.team_shape(), static_cast<char*>(grads) + wte * dtype_size(t),
                             t);
    });
  }
}

template <typename Real>
ModelParallelGroup TrainerT<Real>::model_parallel_group() const {
  if (layout_.scheme() == nullptr) return {};
  Communicator* group = comms_->model_parallel();
  if (group == nullptr) return {};
  return {group, group->size(), group->rank()};
}

template <typename Real>
void TrainerT<Real>::init_parameters() {
  engine_->init_parameters(static_cast<uint64_t>(deck_.train.seed));
}

// One optimizer step, the whole algorithm. The parameters are gathered unit by unit as forward
// and backward reach them (the engine's UnitAccess: an all-gather per unit with prefetch under
// stage 3, nothing to gather below it); the gradients are reduced as backward completes each
// unit (stages 2 and 3) or at its end (finish_backward). Each piece is a Phase: a Kokkos Tools
// region, a span for the run's observer, a timer into the record.
template <typename Real>
StepRecord TrainerT<Real>::step(int64_t step) {
  const TrainConfig& t = deck_.train;
  StepRecord record;
  record.step = step;
  record.lr = learning_rate(t, step);
  const CommStats before = comms_->stats(), inter_before = comms_->stats(CommLevel::InterGroup);
  {
    Phase whole(context_, step_phase(step, record));
    const double loss_sum = run_micro_steps(step, record);
    fault_point("step.gradients", comm_->rank(), step + 1, engine_.get());
    // The optimizer's time covers the global loss and gradient norm too.
    const double micro_batches = static_cast<double>(data_parallel_ranks() * t.grad_accum);
    {
      Phase stats(context_,
                  PhaseSpec("grad_stats").span(SpanKind::Compute).timed(record.times.optimizer));
      reduce_step_stats(loss_sum, micro_batches, record);
    }
    Phase optimizer(context_,
                    PhaseSpec("optimizer").span(SpanKind::Compute).timed(record.times.optimizer));
    if (record.finite) engine_->optimizer_step(optimizer_settings(t, record, micro_batches, step));
  }
  record.comm = comms_->stats() - before;
  record.comm_inter_group = comms_->stats(CommLevel::InterGroup) - inter_before;
  record.times.comm_wait = record.comm.total().seconds;
  return record;
}

template <typename Real>
MicroStepsCall<Real> TrainerT<Real>::driver_call(std::function<Batch(GPT<Real>&, int64_t)> load,
                                                 int64_t micro_batches, StepRecord& record) {
  auto another_model = [this] {
    auto model = std::make_unique<GPT<Real>>(
        layout_, deck_.train.micro_batch, deck_.model.seq_len, context_,
        deck_.train.policy().gemm_math, model_.team_shape(), model_parallel_group(),
        attention_kernels(extensions_), extensions_.checkpoints.get(), &model_);
    if (held_tokens_) model->hold_token_grads(held_tokens_->wte());
    return model;
  };
  return {*engine_,        *comms_,       model_,   another_model,
          std::move(load), micro_batches, context_, record};
}

template <typename Real>
double TrainerT<Real>::run_micro_steps(int64_t step, StepRecord& record) {
  const int64_t micro_batches = deck_.train.grad_accum;
  if (driver_)
    return driver_->run(
        driver_call([this, step](GPT<Real>& model,
                                 int64_t micro) { return load_micro_batch(step, micro, &model); },
                    micro_batches, record));
  double loss_sum = 0.0;
  for (int64_t micro = 0; micro < micro_batches; ++micro) {
    engine_->begin_micro_step(micro, micro_batches);
    const Batch batch = load_micro_batch(step, micro);
    {
      Phase forward(context_, PhaseSpec("forward").timed(record.times.forward));
      loss_sum += model_.forward(*engine_, batch);  // gathers, forward, loss
    }
    Phase backward(context_, PhaseSpec("backward").timed(record.times.backward));
    model_.backward(*engine_, batch);  // backward, reducing each unit's gradients
    if (micro + 1 < micro_batches) continue;
    Phase finish(context_, PhaseSpec("finish_backward").span(SpanKind::Compute));
    engine_->finish_backward();  // the reductions still in flight, in the last backward's time
  }
  return loss_sum;
}

template <typename Real>
PhaseSpec TrainerT<Real>::step_phase(int64_t step, StepRecord& record) const {
  PhaseSpec spec("step");
  spec.span(SpanKind::Step, -1, fmt::format("step {}", step + 1))
      .watched(fmt::format("step {} (forward, backward, optimizer)", step + 1))
      .timed(record.times.total);
  // Collectives that complete on the device stream (NCCL's) are polled by no wait: a hung one
  // shows as a step that does not end, so the step itself has the deadline.
  if (comm_->completes_on_device_stream())
    spec.deadline("the step's kernels and NCCL collectives on the device");
  return spec;
}

template <typename Real>
Batch TrainerT<Real>::load_micro_batch(int64_t step, int64_t micro, GPT<Real>* model) {
  const int64_t B = deck_.train.micro_batch, accum = deck_.train.grad_accum;
  // The ranks of a model-parallel group read the same sequences.
  const int ranks = data_parallel_ranks(), rank = comms_->mesh().data_parallel_rank(comm_->rank());
  if (context_.spans) context_.spans->micro_step(micro);
  return load_sequences(*data_, first_sequence(step, micro, accum, ranks, rank, B), model);
}

template <typename Real>
Batch TrainerT<Real>::load_sequences(const DataSource& source, int64_t first, GPT<Real>* model) {
  source.sequences(first, deck_.train.micro_batch, host_inputs_.data(), host_targets_.data());
  return (model ? *model : model_).upload(host_inputs_.data(), host_targets_.data());
}

// Each micro-batch runs the forward as training does (stage 3 gathers each unit up to the
// head's; or the run's driver), and the losses are summed over the ranks as a step's are.
template <typename Real>
double TrainerT<Real>::forward_only_loss(const DataSource& source, int64_t micro_batches) {
  const int64_t B = deck_.train.micro_batch;
  const int ranks = data_parallel_ranks(), rank = comms_->mesh().data_parallel_rank(comm_->rank());
  const auto load = [&](GPT<Real>& model, int64_t e) {
    return load_sequences(source, forward_only_sequence(e, ranks, rank, B), &model);
  };
  double loss_sum = 0.0;
  StepRecord unused;
  if (driver_)
    loss_sum = driver_->forward_only(driver_call(load, micro_batches, unused));
  else
    for (int64_t e = 0; e < micro_batches; ++e) {
      const Batch batch = load(model_, e);
      engine_->begin_forward_only();
      loss_sum += model_.forward(*engine_, batch, ForwardPass::LossOnly);
      engine_->end_forward_only();
    }
  const std::pair<double, double> sums = sum_over_ranks(loss_sum, {});
  return sums.first / static_cast<double>(ranks * micro_batches);
}

// The loss (counted once per model-parallel group) and the squared gradient norm summed over
// every rank, in one small all-reduce: each dataset's part over the ranks (those without it add
// zeros, exactly), then the parts in dataset order, so that the norm's last bits do not depend on
// the layout (a pipeline's stages hold some datasets each).
template <typename Real>
std::pair<double, double> TrainerT<Real>::sum_over_ranks(double loss_sum,
                                                         const std::vector<double>& sumsq) {
  auto stats_host = Kokkos::create_mirror_view(stats_.view());
  stats_host(0) = counts_held_alike(engine_->slice_rank()) ? static_cast<float>(loss_sum) : 0.0f;
  for (size_t d = 1; d < stats_host.extent(0); ++d)
    stats_host(d) = d <= sumsq.size() ? static_cast<float>(sumsq[d - 1]) : 0.0f;
  Kokkos::deep_copy(stats_.view(), stats_host);
  // The schedule's StepStatistics, posted as every collective of the step is.
  const ScheduledCollective& entry = engine_->schedule().of(-1, ScheduleRole::StepStatistics);
  post_scheduled(entry, *engine_, {stats_.data(), stats_.data()}).wait(true);
  Kokkos::deep_copy(stats_host, stats_.view());
  double norm_squared = 0.0;
  for (size_t d = 1; d < stats_host.extent(0); ++d) norm_squared += stats_host(d);
  return {static_cast<double>(stats_host(0)), norm_squared};
}

// Every stage sums the squares of the gradients each rank owns, so that the norm is computed the
// same way whatever the stage.
template <typename Real>
void TrainerT<Real>::reduce_step_stats(double loss_sum, double micro_batches, StepRecord& record) {
  const std::pair<double, double> sums = sum_over_ranks(loss_sum, engine_->grad_sumsq_owned());
  record.loss = sums.first / micro_batches;
  record.grad_norm = std::sqrt(sums.second) / micro_batches;
  record.finite = std::isfinite(record.loss) && std::isfinite(record.grad_norm);
}

#define ZM_INSTANTIATE(R) template class TrainerT<R>;
ZM_FOR_EACH_REAL(ZM_INSTANTIATE)
#undef ZM_INSTANTIATE

}  // namespace zm
