#include "modules/timeline/timeline_run.hpp"

#include <fmt/format.h>

#include "comm/phase.hpp"
#include "core/log.hpp"
#include "modules/timeline/collective_records.hpp"
#include "modules/timeline/exposure.hpp"
#include "modules/timeline/exposure_figures.hpp"
#include "modules/timeline/trace.hpp"
#include "modules/timeline/trace_file.hpp"

namespace zm {

namespace {

// The trace's window (the traced step and what followed it) to trace.json, if it was traced.
void write_window(const RunContext& context, Tracer& tracer, TraceWriter& trace,
                  const std::string& when) {
  if (!tracer.active()) return;
  Phase phase(context, PhaseSpec("trace write").watched("trace write " + when));
  trace.write_window();
}

// The window of the previous step goes out before a step starts, and the step's own opens (it
// is recorded when the step is one of output.trace_steps).
class TraceWindows final : public StepHook {
 public:
  TraceWindows(const StageOutputs& o, Tracer& tracer, TraceWriter& trace)
      : o_(o), tracer_(tracer), trace_(trace) {}
  void before_step(int64_t step) override {
    write_window(o_.context, tracer_, trace_, fmt::format("before step {}", step + 1));
    tracer_.begin_step(o_.stage, step + 1);
  }
  void at_end() override {
    write_window(o_.context, tracer_, trace_, fmt::format("at the end of stage {}", o_.stage));
  }

 private:
  StageOutputs o_;
  Tracer& tracer_;
  TraceWriter& trace_;
};

// Each step's collectives over the trainer's communicators: their exposure into the stage's
// figures, and on the trace's communication track in traced steps.
class StepCollectives final : public StepHook {
 public:
  StepCollectives(const StageOutputs& o, Tracer* tracer)
      : o_(o),
        tracer_(tracer),
        recorder_(o.trainer.comms()),
        figures_(std::make_shared<ExposureFigures>()) {
    o_.result.figures.push_back(figures_);
  }
  void before_step(int64_t step) override {
    (void)step;
    recorder_.begin();  // fences
  }
  void on_record(const StepRecord& record) override {
    const std::vector<CollectiveTimes> collectives = recorder_.end();
    figures_->add_step(record.step, exposure_of(collectives), in_flight_by_op(collectives));
    if (!tracer_) return;
    add_to_trace(*tracer_, collectives);
    tracer_->resolve_stamps();
  }
  void at_end() override { figures_->gather(o_.result, o_.trainer.comms().world()); }

 private:
  StageOutputs o_;
  Tracer* tracer_;  // output.trace's, or nullptr
  MeshRecorder recorder_;
  std::shared_ptr<ExposureFigures> figures_;
};

class TimelineRun final : public TrainingExtension {
 public:
  void open_outputs(const Deck& deck, Communicator& comm, RunContext& context) override {
    if (!deck.value<bool>("output.trace")) return;
    tracer_ = std::make_unique<Tracer>();
    trace_ = std::make_unique<TraceWriter>(deck, comm, *tracer_);
    context.spans = tracer_.get();
  }
  void add_stage_hooks(const StageOutputs& outputs, StepHooks& hooks) override {
    if (trace_) hooks.add(std::make_unique<TraceWindows>(outputs, *tracer_, *trace_));
    hooks.add(std::make_unique<StepCollectives>(outputs, tracer_.get()));
  }
  void close_outputs(const RunContext& context) override {
    if (!trace_) return;
    Phase phase(context, PhaseSpec("trace write").watched("final trace write"));
    trace_->finish();
    log_root("Trace: {} (open with ui.perfetto.dev or chrome://tracing)\n", trace_->path());
  }

 private:
  // Declared in this order so that the writer, which unconfigures the tracer, goes first.
  std::unique_ptr<Tracer> tracer_;
  std::unique_ptr<TraceWriter> trace_;
};

}  // namespace

std::unique_ptr<TrainingExtension> make_timeline_run() {
  return std::make_unique<TimelineRun>();
}

}  // namespace zm
