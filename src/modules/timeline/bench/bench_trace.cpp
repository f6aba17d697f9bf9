// What the timeline costs (output.trace): training steps with the tracer off and on, alternating
// step by step on the same trainer so that both see the same machine state; the case reports
// both mean step times and their ratio (on / off). It also reports what instrumentation costs
// when tracing is off: the profiling regions and trace scopes a step passes through (counted in
// a traced step), times the measured cost of one untraced scope, as a share of the step.
// Configuration: the one bench_train.cpp uses (L=4, C=256, T=128, B=8), with grad_accum = 2.
#include <benchmark/benchmark.h>

#include <fmt/format.h>

#include <memory>

#include "bench_util.hpp"
#include "comm/communicator.hpp"
#include "comm/phase.hpp"
#include "core/deck.hpp"
#include "core/timer.hpp"
#include "modules/timeline/collective_records.hpp"
#include "modules/timeline/exposure.hpp"
#include "modules/timeline/trace.hpp"
#include "train/trainer.hpp"

namespace {

// One step's seconds, traced or not, its collectives recorded as a run records them (and put
// on the trace when traced); a traced step's events are taken (resolved) and counted.
double timed_step(zm::Trainer& trainer, zm::Tracer& tracer, int64_t step, bool traced,
                  size_t* scopes) {
  tracer.configure(traced, {{1, 1LL << 40}}, 0);
  tracer.begin_step(0, step + 1);
  zm::MeshRecorder recorder(trainer.comms());
  const double start = zm::wall_seconds();
  recorder.begin();
  trainer.step(step);
  const std::vector<zm::CollectiveTimes> collectives = recorder.end();
  (void)zm::exposure_of(collectives);
  zm::add_to_trace(tracer, collectives);
  tracer.resolve_stamps();
  const double seconds = zm::wall_seconds() - start;
  if (traced) {
    size_t count = 0;
    for (const zm::TraceEvent& e : tracer.take())
      if (e.kind != static_cast<int32_t>(zm::TraceKind::Collective) &&
          e.kind != static_cast<int32_t>(zm::TraceKind::Wait))
        ++count;
    *scopes = count;
  }
  return seconds;
}

// Seconds of one scope with no tool loaded and the tracer off.
double untraced_scope_seconds(zm::Tracer& tracer) {
  tracer.configure(false, {}, 0);
  const zm::RunContext context{&tracer, nullptr, nullptr};
  constexpr int kScopes = 100000;
  const double start = zm::wall_seconds();
  for (int i = 0; i < kScopes; ++i)
    zm::Phase scope(
        context,
        zm::PhaseSpec("forward block " + std::to_string(i % 12)).span(zm::SpanKind::Compute, i));
  return (zm::wall_seconds() - start) / kScopes;
}

void trace_cost(benchmark::State& state) {
  const int stage = static_cast<int>(state.range(0));
  const zm::Deck deck =
      zm::bench::training_bench_deck({fmt::format("zero.stage={}", stage), "train.grad_accum=2"});
  zm::Tracer tracer;
  auto trainer = zm::make_trainer(deck, stage, zm::bench::world_communicator(),
                                  zm::RunContext{&tracer, nullptr, nullptr});
  trainer->init_parameters();
  size_t scopes = 0;
  timed_step(*trainer, tracer, 0, true, &scopes);  // warm-up: first touch of every buffer
  int64_t step = 1, pairs = 0;
  double off = 0.0, on = 0.0;
  for (auto _ : state) {
    // Alternate which goes first, so that neither always follows the other.
    const bool on_first = pairs % 2 == 1;
    double first = timed_step(*trainer, tracer, step++, on_first, &scopes);
    double second = timed_step(*trainer, tracer, step++, !on_first, &scopes);
    off += on_first ? second : first;
    on += on_first ? first : second;
    state.SetIterationTime(on_first ? first : second);
    ++pairs;
  }
  const double scope_seconds = untraced_scope_seconds(tracer);
  const double n = static_cast<double>(pairs);
  state.counters["step_ms_trace_off"] = 1e3 * off / n;
  state.counters["step_ms_trace_on"] = 1e3 * on / n;
  state.counters["on_over_off"] = on / off;
  state.counters["scopes_per_step"] = static_cast<double>(scopes);
  state.counters["untraced_scope_ns"] = 1e9 * scope_seconds;
  state.counters["untraced_cost_percent"] =
      100.0 * static_cast<double>(scopes) * scope_seconds / (off / n);
  trainer.reset();
}

// Fixed iteration counts keep ranks in step when run under mpiexec.
BENCHMARK(trace_cost)
    ->Name("TraceCost/stage")
    ->DenseRange(0, 3)
    ->Iterations(15)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
