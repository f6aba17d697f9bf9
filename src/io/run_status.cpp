#include "io/run_status.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "io/output_dir.hpp"

namespace zm {

namespace fs = std::filesystem;

namespace {

// The abort record's text as one line, or "" when there is none.
std::string read_abort_record(const std::string& path) {
  std::error_code ignored;
  if (!fs::is_regular_file(path, ignored)) return "";
  std::ifstream in(path);
  std::string line, rank, exit_status, reason;
  while (std::getline(in, line)) {
    if (line.rfind("rank ", 0) == 0) rank = line.substr(5);
    if (line.rfind("exit_status ", 0) == 0) exit_status = line.substr(12);
    if (line.rfind("reason ", 0) == 0) {
      std::ostringstream rest;
      rest << in.rdbuf();  // the reason runs to the end of the file
      reason = line.substr(7) + rest.str();
      while (!reason.empty() && reason.back() == '\n') reason.pop_back();
    }
  }
  return fmt::format("aborted (rank {}, exit status {}): {}", rank.empty() ? "?" : rank,
                     exit_status.empty() ? "?" : exit_status, reason);
}

// Whether the process named by a lock's holder line ("PID 1234 on host n1 (started ...)") is
// alive: 1 yes, 0 no, -1 cannot tell (another host, or no PID in the line).
int holder_alive(const std::string& holder) {
  long pid = 0;
  char host[256] = {};
  if (std::sscanf(holder.c_str(), "PID %ld on host %255s", &pid, host) != 2 || pid <= 0) return -1;
  char here[256] = {};
  gethostname(here, sizeof(here) - 1);
  if (std::string(host) != here) return -1;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM ? 1 : 0;
}

}  // namespace

std::string abort_record_path(const std::string& results_path) {
  return results_path + ".abort";
}

std::string describe_run_status(const std::string& results_path, const std::string& status) {
  if (status != "running") return status;
  const std::string aborted = read_abort_record(abort_record_path(results_path));
  if (!aborted.empty()) return aborted;
  const fs::path lock = fs::path(results_path).parent_path() / OutputDirectory::kLockFile;
  std::string holder;
  std::error_code ignored;
  if (fs::is_regular_file(lock, ignored)) std::getline(std::ifstream(lock), holder);
  switch (holder_alive(holder)) {
    case 1:
      return fmt::format("running ({})", holder);
    case 0:
      return fmt::format(
          "not closed cleanly: the run that wrote it ({}) has ended without recording how "
          "(killed, or its node was lost); the steps up to the last flush are in the file",
          holder);
    default:
      break;
  }
  return fmt::format("running, or not closed cleanly: {} cannot be checked from this host",
                     holder.empty() ? "no run's lock is beside it, so the run that wrote it"
                                    : "the run that wrote it (" + holder + ")");
}

}  // namespace zm
