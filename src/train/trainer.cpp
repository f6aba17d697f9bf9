#include "train/trainer.hpp"

#include <cmath>

#include "core/error.hpp"
#include "core/timer.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/matmul.hpp"
#include "train/fault_injection.hpp"

namespace zm {

namespace {
constexpr double kPi = 3.14159265358979323846;
}

Trainer::Trainer(const Deck& deck, int stage, Communicator& comm)
    : deck_(deck),
      comm_(&comm),
      layout_(deck.model),
      plan_(layout_, comm.size()),
      engine_(ZeroEngine::create(stage, plan_, comm, deck_)),
      model_(make_model_step(layout_, *engine_, deck_)),
      data_(make_data_source(deck)) {
  comm.set_timeout(deck.comm.timeout_s);
  kernels::set_tf32_gemms(deck.train.precision == "tf32");
  PlannedAllocator alloc({{"step_stats", MemCategory::CommBuffers, 2}});
  stats_ = alloc.take<float>("step_stats");
  alloc.finish();
  const size_t tokens = static_cast<size_t>(deck.train.micro_batch * deck.model.seq_len);
  host_inputs_.resize(tokens);
  host_targets_.resize(tokens);
}

std::vector<BufferSpec> Trainer::buffer_plan(const Deck& deck, int stage, int ranks) {
  const ParamLayout layout(deck.model);
  const PartitionPlan plan(layout, ranks);
  std::vector<BufferSpec> buffers = ZeroEngine::buffer_plan(stage, plan, deck);
  for (auto& spec : model_step_buffer_plan(deck)) buffers.push_back(spec);
  buffers.push_back({"step_stats", MemCategory::CommBuffers, 2});
  return buffers;
}

double Trainer::learning_rate(const TrainConfig& t, int64_t step) {
  if (step < t.warmup) return t.lr * static_cast<double>(step + 1) / static_cast<double>(t.warmup);
  const double min_lr = t.lr * t.min_lr_ratio;
  const int64_t decay_steps = std::max<int64_t>(1, t.steps - t.warmup);
  const double progress =
      std::min(1.0, static_cast<double>(step - t.warmup) / static_cast<double>(decay_steps));
  return min_lr + 0.5 * (t.lr - min_lr) * (1.0 + std::cos(kPi * progress));
}

int64_t Trainer::tokens_per_rank_per_step() const {
  return deck_.train.micro_batch * deck_.model.seq_len * deck_.train.grad_accum;
}

StepRecord Trainer::step(int64_t step) {
  const TrainConfig& t = deck_.train;
  const int64_t B = t.micro_batch, accum = t.grad_accum;
  const CommStats comm_before = comm_->stats();
  StepRecord record;
  record.step = step;
  record.lr = learning_rate(t, step);

  const Fault fault = injected_fault(comm_->rank(), step);
  if (fault == Fault::Kill || fault == Fault::Stall) enact_fault(fault);

  Kokkos::fence();
  const double step_start = wall_seconds();
  double loss_sum = 0.0;
  for (int64_t micro = 0; micro < accum; ++micro) {
    engine_->begin_micro_step(micro, accum);
    data_->sequences(first_sequence(step, micro, accum, comm_->size(), comm_->rank(), B), B,
                     host_inputs_.data(), host_targets_.data());
    const Batch batch = model_->upload(host_inputs_.data(), host_targets_.data());

    double start = wall_seconds();
    loss_sum += model_->forward(batch);
    Kokkos::fence();
    record.times.forward += wall_seconds() - start;

    start = wall_seconds();
    model_->backward(batch);
    if (micro + 1 == accum) engine_->finish_backward();
    if (micro + 1 == accum && fault == Fault::NaN) engine_->poison_gradient();
    Kokkos::fence();
    record.times.backward += wall_seconds() - start;
  }

  // Global loss and gradient norm in one small all-reduce: every stage sums the squares of the
  // gradients each rank owns, so that the norm is computed the same way whatever the stage.
  const double optimizer_start = wall_seconds();
  const double sumsq = engine_->grad_sumsq_owned();
  auto stats_host = Kokkos::create_mirror_view(stats_.view());
  stats_host(0) = static_cast<float>(loss_sum);
  stats_host(1) = static_cast<float>(sumsq);
  Kokkos::deep_copy(stats_.view(), stats_host);
  comm_->all_reduce_sum(stats_.data(), 2, DType::F32);
  Kokkos::deep_copy(stats_host, stats_.view());
  const double micro_batches = static_cast<double>(comm_->size() * accum);
  record.loss = static_cast<double>(stats_host(0)) / micro_batches;
  record.grad_norm = std::sqrt(static_cast<double>(stats_host(1))) / micro_batches;
  record.finite = std::isfinite(record.loss) && std::isfinite(record.grad_norm);

  if (record.finite) {
    // torch.nn.utils.clip_grad_norm_: scale by max_norm / (norm + 1e-6), never above 1.
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
    engine_->optimizer_step(settings);
  }
  Kokkos::fence();
  const double end = wall_seconds();
  record.times.optimizer = end - optimizer_start;
  record.times.total = end - step_start;

  const CommStats& after = comm_->stats();
  for (int op = 0; op < kCommOps; ++op) {
    record.comm.ops[op].calls = after.ops[op].calls - comm_before.ops[op].calls;
    record.comm.ops[op].bytes = after.ops[op].bytes - comm_before.ops[op].bytes;
    record.comm.ops[op].seconds = after.ops[op].seconds - comm_before.ops[op].seconds;
  }
  record.times.comm_wait = record.comm.total().seconds;
  return record;
}

}  // namespace zm
