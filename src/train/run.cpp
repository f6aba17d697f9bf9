#include "train/run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include <csignal>
#include <filesystem>
#include <iterator>
#include <memory>

#include "core/error.hpp"
#include "core/log.hpp"
#include "io/checkpoint.hpp"
#include "io/results_file.hpp"
#include "train/memory_check.hpp"

namespace zm {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

std::string thousands(double value) {
  std::string digits = fmt::format("{:.0f}", value);
  std::string out;
  const size_t n = digits.size();
  for (size_t i = 0; i < n; ++i) {
    out += digits[i];
    if (digits[i] != '-' && (n - i - 1) % 3 == 0 && i + 1 < n) out += ',';
  }
  return out;
}

void print_step(const StepRecord& r, const StageResult& s, int64_t steps, int64_t tokens) {
  log_root(
      "[stage {}] step {:>5}/{:<5} loss {:8.4f}  |g| {:8.4f}  lr {:.2e}  fwd {:7.1f}  "
      "bwd {:7.1f}  comm {:6.1f}  opt {:6.1f}  step {:7.1f} ms  {:>9} tok/s/rank\n",
      s.stage, r.step + 1, steps, r.loss, r.grad_norm, r.lr, r.times.forward * 1e3,
      r.times.backward * 1e3, r.times.comm_wait * 1e3, r.times.optimizer * 1e3, r.times.total * 1e3,
      thousands(static_cast<double>(tokens) / r.times.total));
}

// Means over the timed steps: all but the first (which pays one-time costs) when there are two
// or more.
void summarise(StageResult& s) {
  const size_t first = s.steps.size() >= 2 ? 1 : 0;
  const double n = static_cast<double>(s.steps.size() - first);
  if (n <= 0) return;
  for (size_t i = first; i < s.steps.size(); ++i) {
    const StepRecord& r = s.steps[i];
    s.mean_times.forward += r.times.forward / n;
    s.mean_times.backward += r.times.backward / n;
    s.mean_times.comm_wait += r.times.comm_wait / n;
    s.mean_times.optimizer += r.times.optimizer / n;
    s.mean_times.total += r.times.total / n;
  }
  // Traffic is the same every step; take it over all steps.
  for (const StepRecord& r : s.steps)
    for (int op = 0; op < kCommOps; ++op) {
      s.comm_per_step.ops[op].calls += r.comm.ops[op].calls;
      s.comm_per_step.ops[op].bytes += r.comm.ops[op].bytes / static_cast<double>(s.steps.size());
      s.comm_per_step.ops[op].seconds +=
          r.comm.ops[op].seconds / static_cast<double>(s.steps.size());
    }
  for (auto& op : s.comm_per_step.ops) op.calls /= s.steps.size();
  s.mean_step_seconds = s.mean_times.total;
  s.tokens_per_second_per_rank =
      static_cast<double>(s.tokens_per_rank_per_step) / s.mean_times.total;
}

}  // namespace

namespace {

volatile std::sig_atomic_t g_terminate = 0;
extern "C" void on_sigterm(int) {
  g_terminate = 1;
}

// Every rank must agree to stop at the same step (the signal reaches ranks at different times).
bool stop_agreed(Communicator& comm) {
  int mine = g_terminate ? 1 : 0, any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, comm.mpi_comm());
  return any != 0;
}

}  // namespace

namespace {

// What every stage of a run shares.
struct RunSetup {
  const Deck& deck;
  Communicator& comm;
  std::string resume;  // the checkpoint to start from, or ""
  bool checkpoints;    // write checkpoints at the deck's cadence
  ResultsWriter* results;
};

// train.resume and the checkpoint cadence, checked against the stages the deck asks for.
RunSetup check_run_options(const Deck& deck, Communicator& comm, bool write_outputs) {
  RunSetup setup{deck, comm, resolve_resume(deck),
                 write_outputs && deck.output.checkpoint_every > 0, nullptr};
  if (!setup.resume.empty() && deck.zero.all_stages)
    fail("train.resume = \"{}\": resuming needs a single zero.stage, not \"all\"",
         deck.train.resume);
  if (setup.checkpoints && deck.zero.all_stages)
    log_root(
        "note: output.checkpoint_every is ignored with zero.stage = \"all\" (a comparison "
        "run); checkpoints are written for single-stage runs\n");
  return setup;
}

std::unique_ptr<ResultsWriter> open_results(const Deck& deck, Communicator& comm) {
  if (comm.rank() == 0) std::filesystem::create_directories(deck.output.dir);
  auto results =
      std::make_unique<ResultsWriter>(deck, comm.mpi_comm(), deck.output.dir + "/results.h5");
  results->flush("running");
  return results;
}

// The first step to run: after the resumed checkpoint's, or 0 with fresh parameters.
int64_t start_or_resume(Trainer& trainer, const RunSetup& run, int stage) {
  if (run.resume.empty()) {
    trainer.init_parameters();
    return 0;
  }
  const int64_t first_step = load_checkpoint(trainer.engine(), run.deck, run.resume);
  log_root("[stage {}] resumed from {} after step {}\n", stage, run.resume, first_step);
  return first_step;
}

void report_non_finite(const StepRecord& record, int stage) {
  log_root(
      "[stage {}] step {}: the loss or gradient norm is not finite (loss {}, |g| {}); stopping. "
      "The parameters were not updated from this step and no checkpoint is written from it; the "
      "last good checkpoint stays 'latest'.\n",
      stage, record.step + 1, record.loss, record.grad_norm);
}

// After step s + 1 completed: a checkpoint and a results flush at their cadences, and the
// ranks' agreement on SIGTERM. Returns how the run goes on (Completed: with the next step).
RunEnd after_step(Trainer& trainer, const RunSetup& run, int stage, int64_t s) {
  const Deck& deck = run.deck;
  const bool terminate = stop_agreed(run.comm);
  const bool last = s + 1 == deck.train.steps;
  if (run.checkpoints && !deck.zero.all_stages &&
      ((s + 1) % deck.output.checkpoint_every == 0 || last || terminate)) {
    const std::string path = write_checkpoint(trainer.engine(), deck, s + 1);
    log_root("[stage {}] checkpoint {}\n", stage, path);
  }
  if (run.results && ((s + 1) % deck.output.results_every == 0 || last))
    run.results->flush("running");
  if (!terminate) return RunEnd::Completed;
  log_root("[stage {}] SIGTERM received: stopped after step {}{}\n", stage, s + 1,
           run.checkpoints ? " with a checkpoint written; resume with --set train.resume=latest"
                           : " (no checkpoints configured: output.checkpoint_every = 0)");
  return RunEnd::Terminated;
}

// The steps of one stage from `first_step`; returns how they ended.
RunEnd run_steps(Trainer& trainer, const RunSetup& run, StageResult& result, int64_t first_step) {
  const Deck& deck = run.deck;
  for (int64_t s = first_step; s < deck.train.steps; ++s) {
    const StepRecord record = trainer.step(s);
    result.steps.push_back(record);
    const bool log_now = (s + 1) % deck.output.log_every == 0 || s == first_step ||
                         s + 1 == deck.train.steps || !record.finite;
    if (log_now) print_step(record, result, deck.train.steps, result.tokens_per_rank_per_step);
    if (run.results) run.results->record_step(record);
    if (!record.finite) {
      result.stopped_non_finite = true;
      report_non_finite(record, result.stage);
      return RunEnd::NonFinite;
    }
    const RunEnd end = after_step(trainer, run, result.stage, s);
    if (end != RunEnd::Completed) return end;
  }
  return RunEnd::Completed;
}

// One stage: a trainer built and run to the end (or to a stop), its figures gathered.
StageResult run_stage(const RunSetup& run, int stage, RunEnd& end) {
  StageResult result;
  result.stage = stage;
  result.ranks = run.comm.size();
  memory_ledger().reset_peaks();
  run.comm.reset_stats();
  check_memory_fits(run.deck, stage, run.comm);
  if (run.results) run.results->begin_stage(stage);
  {
    const std::unique_ptr<Trainer> owned = make_trainer(run.deck, stage, run.comm);
    Trainer& trainer = *owned;
    result.tokens_per_rank_per_step = trainer.tokens_per_rank_per_step();
    result.param_count = trainer.layout().real_param_count();
    result.padded_param_count = trainer.layout().total();
    log_root(
        "[stage {}] {} ranks, {} parameters ({} with the padded vocabulary), "
        "{} tokens per rank per step\n",
        stage, result.ranks, thousands(static_cast<double>(result.param_count)),
        thousands(static_cast<double>(result.padded_param_count)),
        thousands(static_cast<double>(result.tokens_per_rank_per_step)));
    end = run_steps(trainer, run, result, start_or_resume(trainer, run, stage));
    result.memory = memory_ledger().figures();
    result.memory_by_rank = gather_memory_figures(result.memory, run.comm);
  }
  summarise(result);
  if (run.results) run.results->end_stage(result);
  return result;
}

const char* end_status(RunEnd end) {
  switch (end) {
    case RunEnd::Completed:
      return "completed";
    case RunEnd::Terminated:
      return "terminated";
    case RunEnd::NonFinite:
      break;
  }
  return "stopped_non_finite";
}

}  // namespace

RunOutcome run_training(const Deck& deck, Communicator& comm, bool write_outputs) {
  RunOutcome outcome;
  std::signal(SIGTERM, on_sigterm);
  RunSetup run = check_run_options(deck, comm, write_outputs);
  std::unique_ptr<ResultsWriter> results;
  if (write_outputs) results = open_results(deck, comm);
  run.results = results.get();
  for (int stage : deck.stages()) {
    outcome.stages.push_back(run_stage(run, stage, outcome.end));
    if (outcome.end != RunEnd::Completed) break;
  }
  if (results) results->flush(end_status(outcome.end));
  return outcome;
}

namespace {

// Each category's peak, and the total's, at their largest over ranks.
MemoryFigures largest_over_ranks(const std::vector<MemoryFigures>& by_rank) {
  MemoryFigures worst;
  for (const MemoryFigures& f : by_rank) {
    for (size_t c = 0; c < worst.peak.size(); ++c)
      worst.peak[c] = std::max(worst.peak[c], f.peak[c]);
    worst.peak_total = std::max(worst.peak_total, f.peak_total);
  }
  return worst;
}

}  // namespace

void print_summary(const Deck& deck, const std::vector<StageResult>& results) {
  if (!log_is_root() || results.empty()) return;
  const int ranks = results.front().ranks;
  log_root(
      "\nSummary: {} ranks, {} (real vocabulary) parameters, {} tokens per rank per step; "
      "times are means over the timed steps, memory is the largest over ranks\n",
      ranks, thousands(static_cast<double>(results.front().param_count)),
      thousands(static_cast<double>(results.front().tokens_per_rank_per_step)));
  // Memory columns in the MemCategory enum's order, then the peak of the total.
  constexpr const char* kMemoryHeadings[] = {"params", "grads",   "optim",
                                             "activ",  "commbuf", "work"};
  static_assert(std::size(kMemoryHeadings) == kMemCategories, "a heading per memory category");
  constexpr CommOp kReportedOps[] = {CommOp::AllReduce, CommOp::ReduceScatter, CommOp::AllGather};
  std::string heading = fmt::format("{:>5} {:>12} {:>9} {:>8} {:>8} {:>8} {:>8} |", "stage",
                                    "tok/s/rank", "step ms", "fwd", "bwd", "comm", "opt");
  for (const char* name : kMemoryHeadings) heading += fmt::format(" {:>9}", name);
  heading +=
      fmt::format(" {:>9} | {:>10} {:>10} {:>10}", "peak", "allreduce", "reducescat", "allgather");
  log_root("{}\n", heading);
  log_root("{:>5} {:>12} {:>9} {:>8} {:>8} {:>8} {:>8} | {:>69} | {:>32}\n", "", "", "", "", "", "",
           "", "MiB per rank (peak)", "MiB moved per rank per step");
  for (const StageResult& s : results) {
    const MemoryFigures worst = largest_over_ranks(s.memory_by_rank);
    auto mib = [](size_t bytes) { return static_cast<double>(bytes) / kMiB; };
    std::string line =
        fmt::format("{:>5} {:>12} {:>9.1f} {:>8.1f} {:>8.1f} {:>8.1f} {:>8.1f} |", s.stage,
                    thousands(s.tokens_per_second_per_rank), s.mean_times.total * 1e3,
                    s.mean_times.forward * 1e3, s.mean_times.backward * 1e3,
                    s.mean_times.comm_wait * 1e3, s.mean_times.optimizer * 1e3);
    for (size_t peak : worst.peak) line += fmt::format(" {:>9.2f}", mib(peak));
    line += fmt::format(" {:>9.2f} |", mib(worst.peak_total));
    for (CommOp op : kReportedOps)
      line += fmt::format(" {:>10.3f}", s.comm_per_step[op].bytes / kMiB);
    log_root("{}\n", line);
  }
  const StageResult& last = results.back();
  log_root("\nFigure of merit: {} tokens/s per rank (stage {}, {} ranks, {})\n",
           thousands(last.tokens_per_second_per_rank), last.stage, ranks, deck.path);
  if (results.size() > 1) {
    for (const StageResult& s : results)
      log_root("  stage {}: {} tokens/s per rank, step time {:.2f}x stage {}\n", s.stage,
               thousands(s.tokens_per_second_per_rank),
               s.mean_step_seconds / results.front().mean_step_seconds, results.front().stage);
  }
}

}  // namespace zm
