// What a module adds to zeromini's command line (core/modules.hpp): subcommands of its own, and
// to the `zeromini run` command options, a check before training, a step of the ranks together
// before the first step that may give the run figures, files of the run's results, and a step
// after training that may set the exit status. miniapp/ adds them to the command line (CLI11 stays
// there) and calls them; the core names none of them.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/run_context.hpp"
#include "core/deck.hpp"
#include "io/run_records.hpp"

namespace zm {

class Communicator;
class Watchdog;

// An option that takes a value, e.g. "--some-file FILE"; the value goes to *value. `value_name`
// is what --help shows for the value.
struct CommandOption {
  std::string flag;
  std::string help;
  std::string* value;
  std::string value_name = "FILE";
};

// How the run was asked for, for what a module writes about it (e.g. the command that repeats it).
struct RunInvocation {
  std::string deck_path;
  std::vector<std::string> overrides;  // the --set assignments, in order
  int ranks = 1;
  std::string build;    // the build's one-line description (version, git, Kokkos)
  std::string machine;  // the machine file (--machine), or ""
  int64_t nodes = 1;    // the nodes the ranks run on, as MPI sees them (ranks sharing memory)
};

class RunCommandExtension {
 public:
  virtual ~RunCommandExtension() = default;
  // Its options, each added to `zeromini run`.
  virtual std::vector<CommandOption> options() = 0;
  // On every rank, before training: refuses bad input (zm::Error, exit status 2).
  virtual void before_training(const Deck& /*deck*/, const RunInvocation& /*run*/) {}
  // On every rank, collectively over `comm` (every rank of the run), once the run has printed
  // its opening lines and before its first step: what needs the ranks together before training
  // (e.g. measuring this machine). It may print; it returns figures for the run, which what runs
  // around the steps reads from RunContext::figures (train/training_extensions.hpp).
  virtual RunFigures before_first_step(const Deck& /*deck*/, const RunInvocation& /*run*/,
                                       Communicator& /*comm*/) {
    return {};
  }
  // On rank 0, once the run's closing lines are printed: the files of the run's results it writes
  // beside results.h5 (zm::Error where one cannot be written); their paths, which the line naming
  // the run's results lists after results.h5's.
  virtual std::vector<std::string> write_results(const Deck& /*deck*/, const RunInvocation& /*run*/,
                                                 const RunOutcome& /*outcome*/) {
    return {};
  }
  // On every rank, after training, collectively: the exit status, `status` (the run's) unless
  // the extension has its own to give.
  virtual int after_training(const Deck& /*deck*/, const RunInvocation& /*run*/,
                             const RunOutcome& /*outcome*/, int status, Watchdog& /*watchdog*/,
                             MPI_Comm /*comm*/) {
    return status;
  }
};

void add_run_command_extension(std::unique_ptr<RunCommandExtension> extension);
const std::vector<std::unique_ptr<RunCommandExtension>>& run_command_extensions();

// A positional argument of a subcommand, required, in the order given; the value goes to *value.
struct CommandArgument {
  std::string name;  // as `--help` shows it, e.g. "file"
  std::string help;
  std::string* value;
};

// A subcommand of zeromini that a module adds: `zeromini NAME ARGUMENT... [OPTION VALUE]...`,
// listed by `zeromini --help` after `plan`, in the order the modules added them. When it is the
// one given, run() is called with the process's arguments (for what starts MPI, comm/runtime.hpp)
// and returns the exit status; bad input throws zm::Error (exit status 2), an output that cannot
// be written zm::IoError (4). A stop signal ends it at once: it has no step to stop after.
class Subcommand {
 public:
  virtual ~Subcommand() = default;
  virtual std::string name() const = 0;
  virtual std::string help() const = 0;
  virtual std::vector<CommandArgument> arguments() = 0;
  virtual std::vector<CommandOption> options() { return {}; }
  virtual int run(int& argc, char**& argv) = 0;
};

void add_subcommand(std::unique_ptr<Subcommand> command);
const std::vector<std::unique_ptr<Subcommand>>& subcommands();

}  // namespace zm
