#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/node_split.hpp"
#include "comm/runtime.hpp"
#include "comm/watchdog.hpp"
#include "commands.hpp"
#include "core/build_info.hpp"
#include "core/deck.hpp"
#include "core/deck_schema.hpp"
#include "core/error.hpp"
#include "core/exit_codes.hpp"
#include "core/log.hpp"
#include "core/memory.hpp"
#include "core/text.hpp"
#include "core/zero_mesh.hpp"
#include "io/run_report.hpp"
#include "plan/machine.hpp"
#include "train/command_extensions.hpp"
#include "train/data.hpp"
#include "train/run.hpp"

namespace zm::cli {

namespace {

// One line per setting that differs from its default, with where it was set
// ("  zero.stage = 3  (deck.toml:12)"), as a run prints it before its first step.
std::string changed_settings(const Deck& deck) {
  const Deck defaults;
  std::vector<std::pair<std::string, std::string>> changed;  // "key = value", where
  size_t width = 0;
  for (const auto& spec : deck_detail::schema()) {
    const std::string value = spec.get(deck);
    if (value == spec.get(defaults)) continue;
    changed.emplace_back(fmt::format("{} = {}", spec.full_name(), value),
                         deck.where(spec.full_name()));
    width = std::max(width, changed.back().first.size());
  }
  std::string out =
      fmt::format("Settings ({}; {} differ from the defaults, `--print-deck` shows all):\n",
                  deck.path, changed.size());
  for (const auto& [setting, from] : changed)
    out += fmt::format("  {:<{}}  ({})\n", setting, width, from);
  return out;
}

// Rank 0's closing lines: what the run reports print before the figure of merit
// (io/run_report.hpp), the figure of merit (the last stage's tokens/s per rank) and, over several
// stages, each stage's against the first, then what the reports print after it.
void print_closing_lines(const Deck& deck, const std::vector<StageResult>& results) {
  if (!log_is_root() || results.empty()) return;
  for (const RunReport& r : run_reports())
    if (r.before_figure_of_merit) log_root("{}", r.before_figure_of_merit(deck, results));
  const StageResult& last = results.back();
  log_root("\nFigure of merit: {} tokens/s per rank (stage {}, {} ranks, {})\n",
           thousands(last.tokens_per_second_per_rank), last.stage, results.front().ranks,
           deck.path);
  if (results.size() > 1) {
    for (const StageResult& s : results)
      log_root("  stage {}: {} tokens/s per rank, step time {:.2f}x stage {}\n", s.stage,
               thousands(s.tokens_per_second_per_rank),
               s.mean_times.total / results.front().mean_times.total, results.front().stage);
  }
  for (const RunReport& r : run_reports())
    if (r.after_figure_of_merit) log_root("{}", r.after_figure_of_merit(deck, results));
}

int exit_code(RunEnd end) {
  switch (end) {
    case RunEnd::Completed:
    case RunEnd::Terminated:  // stopped on request, with its state saved
      return kExitCompleted;
    case RunEnd::TerminatedUnsaved:
    case RunEnd::NotStarted:
      return kExitTerminated;
    case RunEnd::NonFinite:
      break;
  }
  return kExitNonFinite;
}

// How the run was asked for, for the modules' steps around it.
RunInvocation invocation(const RunOptions& options, int ranks) {
  RunInvocation run;
  run.deck_path = options.deck;
  run.overrides = options.overrides;
  run.ranks = ranks;
  run.machine = options.machine;
  return run;
}

// The nodes the ranks of `comm` run on, as MPI sees them (ranks sharing memory), not as a deck
// says: the first rank of each node counts it. Collective over `comm`.
int count_nodes(MPI_Comm comm) {
  const NodeComm node(comm);
  const int leader = node.rank() == 0 ? 1 : 0;
  int nodes = 0;
  MPI_Allreduce(&leader, &nodes, 1, MPI_INT, MPI_SUM, comm);
  return nodes;
}

}  // namespace

int run(int& argc, char**& argv, const RunOptions& options) {
  Runtime runtime(argc, argv);
  Deck deck;
  std::vector<std::string> overrides = options.overrides;
  if (!options.out_dir.empty()) overrides.push_back("output.dir=" + options.out_dir);
  try {
    // Every rank reads the deck; they fail identically, so only rank 0 reports.
    deck = load_deck(options.deck, overrides);
    if (!options.out_dir.empty()) deck.origin["output.dir"] = "--out";  // what the user typed
    // A data file its reader refuses (a FIFO, which would block its open; a file of another
    // kind; too short for a sequence), or one this build has no reader for, is bad input too, as
    // is what the modules refuse of the data they read (before_training below).
    check_data(deck);
    for (const auto& extension : run_command_extensions())
      extension->before_training(deck, invocation(options, runtime.size()));
  } catch (const Error& error) {
    if (runtime.rank() == 0) log_error("zeromini: error: {}\n", error.what());
    return kExitBadInput;
  }

  try {
    // From here on every blocking call runs under comm.timeout_s.
    runtime.watchdog().arm(deck.comm.timeout_s);
    const int nodes = count_nodes(MPI_COMM_WORLD);
    const int threads = Kokkos::DefaultHostExecutionSpace().concurrency();
    log_root("zeromini {} | {} ranks on {} node{} | Kokkos {} ({}) | {}\n", git_revision(),
             runtime.size(), nodes, nodes == 1 ? "" : "s", build_features().kokkos_version,
             kokkos_backends(), mpi_library_version());
    // What this run chose; the whole resolved deck is in <output.dir>/deck.toml.
    log_root("{}", options.print_deck ? deck.resolved_toml() + "\n" : changed_settings(deck));
    auto comm = make_communicator(deck.comm.backend, MPI_COMM_WORLD, runtime.watchdog());
    RunInvocation run = invocation(options, runtime.size());
    run.nodes = nodes;
    run.build =
        fmt::format("zeromini {} | Kokkos {} ({}) | {} rank{} x {} thread{}", git_revision(),
                    build_features().kokkos_version, kokkos_backends(), runtime.size(),
                    runtime.size() == 1 ? "" : "s", threads, threads == 1 ? "" : "s");
    RunFigures figures;
    for (const auto& extension : run_command_extensions())
      for (const auto& [name, value] : extension->before_first_step(deck, run, *comm))
        figures[name] = value;
    MemoryLedger ledger;
    const RunContext context{nullptr, &runtime.watchdog(), &ledger, &figures};
    const RunOutcome outcome = run_training(deck, *comm, context, true);
    print_closing_lines(deck, outcome.stages);
    if (runtime.rank() == 0) {
      std::string written = deck.output.dir + "/results.h5";
      for (const auto& extension : run_command_extensions())
        for (const std::string& path : extension->write_results(deck, run, outcome))
          written += ", " + path;
      log_root("Results: {}\n", written);
    }
    int status = exit_code(outcome.end);
    for (const auto& extension : run_command_extensions())
      status =
          extension->after_training(deck, run, outcome, status, runtime.watchdog(), MPI_COMM_WORLD);
    // Everything is written and closed: a finalize that hangs ends the rank with this status.
    runtime.watchdog().set_finalize_status(status);
    return status;
  } catch (const IoError& error) {
    if (runtime.rank() == 0) log_error("zeromini: I/O error: {}\n", error.what());
    return kExitIoError;
  } catch (const CollectiveError& error) {
    if (runtime.rank() == 0) log_error("zeromini: error: {}\n", error.what());
    return kExitBadInput;
  } catch (const std::exception& error) {
    // An error on one rank must not leave the others waiting in a collective.
    const std::string message =
        fmt::format("zeromini: rank {}: error: {}", runtime.rank(), error.what());
    if (runtime.size() > 1) abort_job(message.c_str(), kExitRankFailed);
    log_error("{}\n", message);
    return kExitRankFailed;
  }
}

}  // namespace zm::cli
