#include "train/run.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <type_traits>

#include "comm/agree.hpp"
#include "comm/phase.hpp"
#include "comm/watched_mpi.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/stop_signal.hpp"
#include "core/text.hpp"
#include "core/validate.hpp"
#include "io/checkpoint.hpp"
#include "io/output_dir.hpp"
#include "io/results_file.hpp"
#include "plan/run_extensions.hpp"
#include "plan/run_options.hpp"
#include "train/step_hooks.hpp"
#include "train/throughput.hpp"
#include "train/training_extensions.hpp"

namespace zm {

namespace {

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
  const double all = static_cast<double>(s.steps.size());
  for (const StepRecord& r : s.steps)
    for (int op = 0; op < kCommOps; ++op) {
      s.comm_per_step.ops[op].calls += r.comm.ops[op].calls;
      s.comm_per_step.ops[op].bytes += r.comm.ops[op].bytes / all;
      s.comm_per_step.ops[op].seconds += r.comm.ops[op].seconds / all;
      s.comm_inter_group_per_step.ops[op].bytes += r.comm_inter_group.ops[op].bytes / all;
    }
  for (auto& op : s.comm_per_step.ops) op.calls /= s.steps.size();
  s.tokens_per_second_per_rank =
      static_cast<double>(s.tokens_per_rank_per_step) / s.mean_times.total;
}

// Every rank's memory figures, on rank 0 (empty elsewhere). Reporting traffic goes straight to
// MPI: it is not part of the training step's accounting.
std::vector<MemoryFigures> gather_memory_figures(const MemoryFigures& mine, Communicator& comm) {
  static_assert(std::is_trivially_copyable_v<MemoryFigures>);
  constexpr int kBytes = sizeof(MemoryFigures);
  std::vector<MemoryFigures> all(comm.rank() == 0 ? static_cast<size_t>(comm.size()) : 0);
  MPI_Gather(&mine, kBytes, MPI_BYTE, all.data(), kBytes, MPI_BYTE, 0, comm.mpi_comm());
  return all;
}

// Every rank must agree to stop at the same step (a signal reaches ranks at different times).
// Returns the signal (the largest number any rank received), or 0.
int stop_agreed(const RunContext& context, Communicator& comm, const std::string& when) {
  Phase phase(context, PhaseSpec("stop agreement").watched("agreement to stop " + when));
  int mine = stop_signal(), any = 0;
  watched_allreduce(comm.watchdog(), &mine, &any, 1, MPI_INT, MPI_MAX, comm.mpi_comm(),
                    "the agreement to stop " + when);
  return any;
}

// What every stage of a run shares.
struct RunSetup {
  const Deck& deck;
  Communicator& comm;
  const RunContext& context;
  bool checkpoints;         // write checkpoints at the deck's cadence
  std::string resume = "";  // the checkpoint to start from, or ""
  ResultsWriter* results = nullptr;
  // What the modules add to the run (train/training_extensions.hpp).
  std::vector<std::unique_ptr<TrainingExtension>>* extensions = nullptr;
};

// train.resume and the checkpoint cadence, checked against the stages the deck asks for.
// A refusal here (a 'latest' that is not a regular file, a resume with zero.stage = "all") is bad
// input, agreed by every rank: exit status 2, not a failed rank.
RunSetup check_run_options(const Deck& deck, Communicator& comm, const RunContext& context,
                           bool write_outputs) {
  RunSetup setup{deck, comm, context,
                 write_outputs && deck.output.checkpoint_every > 0 && !deck.zero.all_stages};
  std::string error;
  const int ranks_per_node = run_ranks_per_node(deck, comm);  // collective: before the try
  try {
    for (int stage : deck.stages()) validate(deck, {stage, comm.size(), ranks_per_node});
    setup.resume = resolve_resume(deck);
    if (!setup.resume.empty() && deck.zero.all_stages)
      fail("train.resume = \"{}\": resuming needs a single zero.stage, not \"all\"",
           deck.train.resume);
  } catch (const Error& e) {
    error = e.what();
  }
  agree_or_fail(comm.watchdog(), comm.mpi_comm(), error, "checking the deck and train.resume");
  if (write_outputs && deck.output.checkpoint_every > 0 && deck.zero.all_stages)
    log_root(
        "note: output.checkpoint_every is ignored with zero.stage = \"all\" (a comparison "
        "run); checkpoints are written for single-stage runs\n");
  return setup;
}

// Whether the run resumes from a checkpoint of its own output directory: then results.h5 there
// holds the earlier rows of the same training, which it keeps.
bool resumes_here(const RunSetup& run) {
  namespace fs = std::filesystem;
  if (run.resume.empty()) return false;
  std::error_code ignored;
  return fs::equivalent(fs::path(run.resume).parent_path(), checkpoint_dir(run.deck), ignored);
}

// The first step to run: after the resumed checkpoint's, or 0 with fresh parameters.
int64_t start_or_resume(Trainer& trainer, const RunSetup& run, int stage) {
  if (run.resume.empty()) {
    trainer.init_parameters();
    return 0;
  }
  Phase phase(run.context, PhaseSpec("resume").watched("resume from " + run.resume));
  const int64_t first_step = load_checkpoint(trainer.engine(), run.deck, run.resume);
  log_root("[stage {}] resumed from {} after step {}\n", stage, run.resume, first_step);
  return first_step;
}

// After step s + 1, on a stop signal the ranks agreed on: how the run ends, said once.
RunEnd stopped(const RunSetup& run, int stage, int64_t s, int stop) {
  const char* name = signal_name(stop);
  if (run.checkpoints) {
    log_root(
        "[stage {}] {} received: stopped after step {} with a checkpoint written; resume "
        "with --set train.resume=latest\n",
        stage, name, s + 1);
    return RunEnd::Terminated;
  }
  log_root(
      "[stage {}] {} received: stopped after step {}. No checkpoint was written (none is "
      "configured: output.checkpoint_every = 0{}); the results are flushed, and the state "
      "of the run is lost\n",
      stage, name, s + 1, run.deck.zero.all_stages ? ", or zero.stage = \"all\"" : "");
  return RunEnd::TerminatedUnsaved;
}

// The steps of one stage from `first_step`, the hooks around each; returns how they ended.
RunEnd run_steps(Trainer& trainer, const RunSetup& run, StepHooks& hooks, StageResult& result,
                 int64_t first_step) {
  const int64_t steps = run.deck.train.steps;
  const int stop =
      first_step < steps ? stop_agreed(run.context, run.comm, "before the first step") : 0;
  if (stop) {
    log_root(
        "[stage {}] {} received: terminated before training started; nothing was trained "
        "or saved\n",
        result.stage, signal_name(stop));
    return RunEnd::NotStarted;
  }
  for (int64_t s = first_step; s < steps; ++s) {
    hooks.before_step(s);
    const StepRecord record = trainer.step(s);
    result.steps.push_back(record);
    hooks.on_record(record);
    if (!record.finite) {
      result.stopped_non_finite = true;
      log_root(
          "[stage {}] step {}: the loss or gradient norm is not finite (loss {}, |g| {}); "
          "stopping. The parameters were not updated from this step and no checkpoint is written "
          "from it; the last good checkpoint stays 'latest'.\n",
          result.stage, record.step + 1, record.loss, record.grad_norm);
      return RunEnd::NonFinite;
    }
    const int stop_now = stop_agreed(run.context, run.comm, fmt::format("after step {}", s + 1));
    hooks.after_step({record, s + 1 == steps, stop_now != 0});
    if (stop_now) return stopped(run, result.stage, s, stop_now);
  }
  return RunEnd::Completed;
}

// One stage: a trainer built and run to the end (or to a stop), its figures gathered.
StageResult run_stage(const RunSetup& run, int stage, RunEnd& end) {
  Phase phase(run.context,
              PhaseSpec("stage setup").watched(fmt::format("setting up stage {}", stage)));
  StageResult result;
  result.stage = stage;
  result.ranks = run.comm.size();
  run.context.ledger->reset_peaks();
  run.comm.reset_stats();
  for (const auto& extension : *run.extensions) extension->before_stage(run.deck, stage, run.comm);
  {
    const std::unique_ptr<Trainer> owned = make_trainer(run.deck, stage, run.comm, run.context);
    Trainer& trainer = *owned;
    result.tokens_per_rank_per_step = trainer.tokens_per_rank_per_step();
    result.param_count = trainer.layout().real_param_count();
    result.padded_param_count = trainer.layout().global_total();
    result.shard_size = trainer.comms().mesh().group_ranks();
    result.model_parallel = trainer.comms().mesh().model_parallel();
    log_root(
        "[stage {}] {} ranks, {} parameters ({} with the padded vocabulary), "
        "{} tokens per rank per step\n",
        stage, result.ranks, thousands(static_cast<double>(result.param_count)),
        thousands(static_cast<double>(result.padded_param_count)),
        thousands(static_cast<double>(result.tokens_per_rank_per_step)));
    const ZeroMesh& mesh = trainer.comms().mesh();
    if (mesh.hybrid()) log_root("[stage {}] {}\n", stage, describe_zero_mesh(mesh, run.deck));
    for (const std::string& line : describe_model_dimensions(mesh))
      log_root("[stage {}] {}, {} parameters per rank before ZeRO shards them\n", stage, line,
               thousands(static_cast<double>(trainer.layout().total())));
    const int64_t first_step = start_or_resume(trainer, run, stage);
    if (run.results) run.results->begin_stage(stage, first_step, run.resume);
    ZeroEngine* checkpointed = run.checkpoints ? &trainer.engine() : nullptr;
    const StageOutputs outputs{
        run.deck,    run.context,  stage,   first_step, result.tokens_per_rank_per_step,
        run.results, checkpointed, trainer, result};
    StepHooks hooks;
    for (const auto& extension : *run.extensions) extension->add_stage_hooks(outputs, hooks);
    add_stage_hooks(outputs, hooks);
    end = run_steps(trainer, run, hooks, result, first_step);
    hooks.at_end();
    result.memory = run.context.ledger->figures();
    result.memory_by_rank = gather_memory_figures(result.memory, run.comm);
  }
  summarise(result);
  result.throughput = measure_throughput(result, run.deck.model,
                                         attention_kernels(run_extensions(run.deck, stage)));
  for (const auto& figures : result.figures) figures->throughput_measured(result.throughput);
  if (run.results) run.results->end_stage(result);
  return result;
}

}  // namespace

RunOutcome run_training(const Deck& deck, Communicator& comm, const RunContext& given,
                        bool write_outputs) {
  ZM_ASSERT(given.ledger != nullptr, "run_training needs the run's memory ledger");
  // The modules' extensions of the run; they may give its phases a span observer.
  std::vector<std::unique_ptr<TrainingExtension>> extensions = make_training_extensions();
  RunContext context = given;
  RunOutcome outcome;
  RunSetup run = check_run_options(deck, comm, context, write_outputs);
  run.extensions = &extensions;
  std::unique_ptr<OutputDirectory> owned_dir;
  std::unique_ptr<ResultsWriter> results;
  if (write_outputs) {
    Phase phase(context, PhaseSpec("output setup").watched("opening " + deck.output.dir));
    owned_dir = std::make_unique<OutputDirectory>(deck, comm.mpi_comm(), comm.watchdog());
    results = std::make_unique<ResultsWriter>(deck, comm.mpi_comm(), comm.watchdog(),
                                              deck.output.dir + "/results.h5", resumes_here(run));
    results->flush("running");
    for (const auto& extension : extensions) extension->open_outputs(deck, comm, context);
  }
  run.results = results.get();
  try {
    for (int stage : deck.stages()) {
      outcome.stages.push_back(run_stage(run, stage, outcome.end));
      if (outcome.end != RunEnd::Completed) break;
    }
  } catch (const IoError&) {
    // What was measured so far still goes to results.h5 if the disk lets it.
    if (results) try {
        results->flush("io_error");
      } catch (const IoError&) {
      }
    throw;
  }
  if (write_outputs)
    for (const auto& extension : extensions) extension->close_outputs(context);
  if (results) {
    Phase phase(context, PhaseSpec("results").watched("final results write"));
    results->flush(run_end_name(outcome.end));
  }
  return outcome;
}

}  // namespace zm
