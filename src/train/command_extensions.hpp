// What a module adds to the `zeromini run` command (core/modules.hpp): options on its command
// line, a check before training, and a step after it that may set the exit status. miniapp/
// adds the options to the command and calls the steps; the core names none of them.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "core/deck.hpp"
#include "io/run_records.hpp"

namespace zm {

class Watchdog;

// An option that takes a value, e.g. "--some-file FILE"; the value goes to *value.
struct CommandOption {
  std::string flag;
  std::string help;
  std::string* value;
};

// How the run was asked for, for what a module writes about it (e.g. the command that repeats it).
struct RunInvocation {
  std::string deck_path;
  std::vector<std::string> overrides;  // the --set assignments, in order
  int ranks = 1;
  std::string build;  // the build's one-line description (version, git, Kokkos)
};

class RunCommandExtension {
 public:
  virtual ~RunCommandExtension() = default;
  // Its options, each added to `zeromini run`.
  virtual std::vector<CommandOption> options() = 0;
  // On every rank, before training: refuses bad input (zm::Error, exit status 2).
  virtual void before_training(const Deck& deck, const RunInvocation& run) {
    (void)deck;
    (void)run;
  }
  // On every rank, after training, collectively: the exit status, `status` (the run's) unless
  // the extension has its own to give.
  virtual int after_training(const Deck& deck, const RunInvocation& run, const RunOutcome& outcome,
                             int status, Watchdog& watchdog, MPI_Comm comm) {
    (void)deck, (void)run, (void)outcome, (void)watchdog, (void)comm;
    return status;
  }
};

void add_run_command_extension(std::unique_ptr<RunCommandExtension> extension);
const std::vector<std::unique_ptr<RunCommandExtension>>& run_command_extensions();

}  // namespace zm
