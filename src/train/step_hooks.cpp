#include "train/step_hooks.hpp"

#include <fmt/format.h>

#include "comm/phase.hpp"
#include "core/log.hpp"
#include "core/text.hpp"
#include "io/checkpoint.hpp"

namespace zm {

namespace {

// One line per output.log_every steps, and for the first, the last and a non-finite step.
class ProgressLines final : public StepHook {
 public:
  explicit ProgressLines(const StageOutputs& o) : o_(o) {}
  void on_record(const StepRecord& r) override {
    const int64_t steps = o_.deck.train.steps;
    const bool log_now = (r.step + 1) % o_.deck.output.log_every == 0 || r.step == o_.first_step ||
                         r.step + 1 == steps || !r.finite;
    if (!log_now) return;
    log_root(
        "[stage {}] step {:>5}/{:<5} loss {:8.4f}  |g| {:8.4f}  lr {:.2e}  fwd {:7.1f}  "
        "bwd {:7.1f}  comm {:6.1f}  opt {:6.1f}  step {:7.1f} ms  {:>9} tok/s/rank\n",
        o_.stage, r.step + 1, steps, r.loss, r.grad_norm, r.lr, r.times.forward * 1e3,
        r.times.backward * 1e3, r.times.comm_wait * 1e3, r.times.optimizer * 1e3,
        r.times.total * 1e3,
        thousands(static_cast<double>(o_.tokens_per_rank_per_step) / r.times.total));
  }

 private:
  StageOutputs o_;
};

// A checkpoint at output.checkpoint_every, after the last step, and before a stop.
class Checkpoints final : public StepHook {
 public:
  explicit Checkpoints(const StageOutputs& o) : o_(o) {}
  void after_step(const StepDone& done) override {
    const int64_t steps_done = done.record.step + 1;
    if (steps_done % o_.deck.output.checkpoint_every != 0 && !done.last && !done.stopping) return;
    Phase phase(o_.context,
                PhaseSpec("checkpoint")
                    .span(SpanKind::Io)
                    .watched(fmt::format("checkpoint write after step {}", steps_done)));
    const CheckpointWritten written = write_checkpoint(*o_.checkpointed, o_.deck, steps_done);
    if (written.estimated_bytes == 0)
      log_root("[stage {}] checkpoint {} ({} bytes written)\n", o_.stage, written.path,
               written.written_bytes);
    else
      log_root("[stage {}] checkpoint {} ({} bytes written, {} estimated and reserved before)\n",
               o_.stage, written.path, written.written_bytes, written.estimated_bytes);
  }

 private:
  StageOutputs o_;
};

// Every step's record gathered into results.h5's rows; the file flushed at output.results_every
// and after the last step.
class ResultsRows final : public StepHook {
 public:
  explicit ResultsRows(const StageOutputs& o) : o_(o) {}
  void on_record(const StepRecord& record) override {
    Phase phase(o_.context, PhaseSpec("results gather")
                                .watched(fmt::format("results gather step {}", record.step + 1)));
    o_.results->record_step(record, o_.result.figures);
  }
  void after_step(const StepDone& done) override {
    const int64_t steps_done = done.record.step + 1;
    if (steps_done % o_.deck.output.results_every != 0 && !done.last) return;
    Phase phase(o_.context, PhaseSpec("results")
                                .span(SpanKind::Io)
                                .watched(fmt::format("results write after step {}", steps_done)));
    o_.results->flush("running");
  }

 private:
  StageOutputs o_;
};

}  // namespace

void add_stage_hooks(const StageOutputs& outputs, StepHooks& hooks) {
  hooks.add(std::make_unique<ProgressLines>(outputs));
  if (outputs.checkpointed) hooks.add(std::make_unique<Checkpoints>(outputs));
  if (outputs.results) hooks.add(std::make_unique<ResultsRows>(outputs));
}

}  // namespace zm
