#include "run_reference.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "comm/watched_mpi.hpp"
#include "core/error.hpp"
#include "core/exit_codes.hpp"
#include "core/log.hpp"
#include "core/regular_file.hpp"
#include "io/durable_file.hpp"
#include "io/reference_losses.hpp"
#include "io/reference_settings.hpp"

namespace zm::cli {

namespace {

// `word` as one shell word: as it is when it holds only characters no shell treats specially,
// else in single quotes.
std::string shell_word(const std::string& word) {
  const bool plain = !word.empty() && word.find_first_not_of(
                                          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789_./=:,+-@%") == std::string::npos;
  if (plain) return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The command that makes the reference again: the launch, the deck and the --set overrides (the
// output directory and the peak do not change the losses).
std::string write_command(const RunOptions& options, int ranks) {
  std::string command =
      fmt::format("mpiexec -n {} zeromini run {}", ranks, shell_word(options.deck));
  for (const std::string& assignment : options.overrides)
    command += " --set " + shell_word(assignment);
  return command + " --write-reference " + shell_word(options.write_reference);
}

// The place of the reference to write, checked before training: a FIFO there would block the
// write, and a missing directory would fail it after the whole run.
void check_writable_place(const std::string& path) {
  require_regular_or_absent(path, "reference file to write (--write-reference)");
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(path).parent_path();
  std::error_code error;
  if (!dir.empty() && !fs::is_directory(dir, error))
    fail("--write-reference {}: the directory {} does not exist", path, dir.string());
}

}  // namespace

ReferenceRun prepare_reference(const RunOptions& options, const Deck& deck, int ranks) {
  ReferenceRun run;
  if (!options.check_reference.empty()) {
    run.check_file = options.check_reference;
    run.check = read_reference(run.check_file);
    check_reference_applies(run.check, run.check_file, deck, ranks);
  }
  if (!options.write_reference.empty()) {
    run.write_file = options.write_reference;
    check_reference_can_be_written(deck);
    check_writable_place(run.write_file);
  }
  return run;
}

int finish_reference(const ReferenceRun& reference, const RunOptions& options, const Deck& deck,
                     const RunOutcome& outcome, const std::string& build, int status,
                     Watchdog& watchdog, MPI_Comm comm) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  if (reference.check_file.empty() && reference.write_file.empty()) return status;
  // Every rank holds the same losses (the step's global mean); rank 0 judges, and its status is
  // every rank's, so that the launcher reports one.
  if (rank == 0) {
    if (!reference.check_file.empty()) {
      const LossComparison comparison = compare_losses(reference.check, outcome.stages);
      for (const std::string& line : comparison.lines)
        log_root("Reference check ({}): {}\n", reference.check_file, line);
      if (comparison.checked == 0 && comparison.unreached.empty())
        log_root("Reference check ({}): not completed: the run trained no stage\n",
                 reference.check_file);
      if (comparison.misses > 0 && status == kExitCompleted) status = kExitReferenceMiss;
    }
    if (!reference.write_file.empty()) {
      if (outcome.end != RunEnd::Completed) {
        log_root("Reference: {} not written: the run did not complete\n", reference.write_file);
      } else {
        const Reference made = make_reference(deck, ranks, outcome.stages,
                                              {options.deck, write_command(options, ranks), build});
        const std::string error = write_file_durably(reference.write_file, format_reference(made));
        if (error.empty()) {
          log_root("Reference: wrote {}\n", reference.write_file);
        } else {
          log_error("zeromini: I/O error: the reference {} was not written: {}\n",
                    reference.write_file, error);
          if (status == kExitCompleted) status = kExitIoError;
        }
      }
    }
  }
  watched_bcast(watchdog, &status, 1, MPI_INT, 0, comm, "the reference check's verdict");
  return status;
}

}  // namespace zm::cli
