#include "modules/reference_check/run_reference.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "comm/watched_mpi.hpp"
#include "core/error.hpp"
#include "core/exit_codes.hpp"
#include "core/log.hpp"
#include "core/regular_file.hpp"
#include "io/durable_file.hpp"
#include "modules/reference_check/reference_file.hpp"
#include "modules/reference_check/reference_losses.hpp"
#include "modules/reference_check/reference_settings.hpp"

namespace zm {

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
std::string write_command(const RunInvocation& run, const std::string& file) {
  std::string command =
      fmt::format("mpiexec -n {} zeromini run {}", run.ranks, shell_word(run.deck_path));
  for (const std::string& assignment : run.overrides) command += " --set " + shell_word(assignment);
  return command + " --write-reference " + shell_word(file);
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

class ReferenceRun final : public RunCommandExtension {
 public:
  std::vector<CommandOption> options() override {
    return {{"--check-reference",
             "Reference file (inputs/references/*.toml): refuse the run before training if a "
             "setting that decides the losses differs from the reference's; after training "
             "compare the loss at each referenced step of each stage, and exit 7 on a miss, "
             "naming the stage, the step and the relative difference",
             &check_file_},
            {"--write-reference",
             "Write the run's losses at its first, middle and last step (every stage it trains), "
             "the settings that decide them and the tolerance as a reference file for "
             "--check-reference (fp32 runs without quantization, from the first step)",
             &write_file_}};
  }

  void before_training(const Deck& deck, const RunInvocation& run) override {
    if (!check_file_.empty()) {
      check_ = read_reference(check_file_);
      check_reference_applies(check_, check_file_, deck, run.ranks);
    }
    if (!write_file_.empty()) {
      check_reference_can_be_written(deck);
      check_writable_place(write_file_);
    }
  }

  // Rank 0 compares the losses and reports (a miss: stage, step, both losses, the relative
  // difference), and writes the reference of a completed run. Every rank returns the same
  // status: the run's, unless it completed (0) and a loss missed (kExitReferenceMiss) or the
  // reference could not be written (kExitIoError).
  int after_training(const Deck& deck, const RunInvocation& run, const RunOutcome& outcome,
                     int status, Watchdog& watchdog, MPI_Comm comm) override;

 private:
  std::string check_file_;  // --check-reference, or ""
  Reference check_;         // read from it
  std::string write_file_;  // --write-reference, or ""
};

}  // namespace

int ReferenceRun::after_training(const Deck& deck, const RunInvocation& run,
                                 const RunOutcome& outcome, int status, Watchdog& watchdog,
                                 MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (check_file_.empty() && write_file_.empty()) return status;
  // Every rank holds the same losses (the step's global mean); rank 0 judges, and its status is
  // every rank's, so that the launcher reports one.
  if (rank == 0) {
    if (!check_file_.empty()) {
      const LossComparison comparison = compare_losses(check_, outcome.stages);
      for (const std::string& line : comparison.lines)
        log_root("Reference check ({}): {}\n", check_file_, line);
      if (comparison.checked == 0 && comparison.unreached.empty())
        log_root("Reference check ({}): not completed: the run trained no stage\n", check_file_);
      if (comparison.misses > 0 && status == kExitCompleted) status = kExitReferenceMiss;
    }
    if (!write_file_.empty()) {
      if (outcome.end != RunEnd::Completed) {
        log_root("Reference: {} not written: the run did not complete\n", write_file_);
      } else {
        const Reference made =
            make_reference(deck, run.ranks, outcome.stages,
                           {run.deck_path, write_command(run, write_file_), run.build});
        const std::string error = write_file_durably(write_file_, format_reference(made));
        if (error.empty()) {
          log_root("Reference: wrote {}\n", write_file_);
        } else {
          log_error("zeromini: I/O error: the reference {} was not written: {}\n", write_file_,
                    error);
          if (status == kExitCompleted) status = kExitIoError;
        }
      }
    }
  }
  watched_bcast(watchdog, &status, 1, MPI_INT, 0, comm, "the reference check's verdict");
  return status;
}

std::unique_ptr<RunCommandExtension> make_reference_run() {
  return std::make_unique<ReferenceRun>();
}

}  // namespace zm
