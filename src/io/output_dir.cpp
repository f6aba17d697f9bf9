#include "io/output_dir.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>

#include "comm/agree.hpp"
#include "comm/watchdog.hpp"
#include "core/log.hpp"
#include "core/registry.hpp"
#include "io/checkpoint.hpp"
#include "io/durable_file.hpp"

namespace zm {

namespace fs = std::filesystem;

namespace {

// Who holds the lock: "PID 1234 on host node17 (started 2026-11-23 10:00:00)".
std::string holder_line() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  const std::time_t now = std::time(nullptr);
  char when[32] = {};
  std::strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", std::localtime(&now));
  return fmt::format("PID {} on host {} (started {})", getpid(), host, when);
}

// The checkpoints of another run: step_*.h5 files and 'latest'.
std::vector<fs::path> checkpoints_in(const fs::path& dir) {
  std::vector<fs::path> found;
  if (!fs::is_directory(dir)) return found;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name == "latest" || (name.rfind("step_", 0) == 0 && entry.path().extension() == ".h5"))
      found.push_back(entry.path());
  }
  return found;
}

struct LeftoverFiles;  // the registry's tag
std::vector<std::string>& leftover_files() {
  return registry<std::string, LeftoverFiles>();
}

// What a run killed mid-write leaves: temporary files, and those named by add_leftover_file.
void remove_stale_temporaries(const fs::path& out, const fs::path& checkpoints) {
  for (const fs::path& dir : {out, checkpoints}) {
    if (!fs::is_directory(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      if (entry.path().extension() == ".tmp" ||
          std::count(leftover_files().begin(), leftover_files().end(), name) > 0) {
        log_root("note: removing {}, left by a run that ended while writing it\n",
                 entry.path().string());
        fs::remove(entry.path());
      }
    }
  }
}

}  // namespace

void add_leftover_file(std::string name) {
  leftover_files().push_back(std::move(name));
}

OutputDirectory::OutputDirectory(const Deck& deck, MPI_Comm comm, Watchdog& watchdog) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::string error;
  if (rank == 0) {
    BlockingRegion region(watchdog, "claiming " + deck.output.dir, kLocalRegion, WaitKind::Io);
    try {
      error = claim(deck);
    } catch (const std::exception& e) {
      error = fmt::format("output.dir = \"{}\": {}", deck.output.dir, e.what());
    }
  }
  agree_or_fail(watchdog, comm, error, "claiming the output directory");
}

OutputDirectory::~OutputDirectory() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // closing releases the flock
}

std::string OutputDirectory::lock(const std::string& dir) {
  const std::string path = dir + "/" + kLockFile;
  lock_fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0) return fmt::format("cannot create {}: {}", path, errno_text(errno));
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) == 0) {
    const std::string holder = holder_line() + "\n";
    if (::ftruncate(lock_fd_, 0) == 0 &&
        ::pwrite(lock_fd_, holder.data(), holder.size(), 0) == static_cast<ssize_t>(holder.size()))
      ::fsync(lock_fd_);
    return "";
  }
  const int error = errno;
  if (error == EWOULDBLOCK) {
    std::string holder;
    std::getline(std::ifstream(path), holder);
    return fmt::format(
        "output.dir = \"{}\" is in use by another run: {}. Two runs in one directory would "
        "overwrite each other's results and checkpoints; choose another --out, or wait for it to "
        "end",
        dir, holder.empty() ? std::string("(holder unknown)") : holder);
  }
  // A file system without flock (some network mounts): go on, unprotected, and say so.
  log_root(
      "warning: {}: cannot lock it ({}); a second run in this directory would not be "
      "detected\n",
      path, errno_text(error));
  ::close(lock_fd_);
  lock_fd_ = -1;
  return "";
}

std::string OutputDirectory::claim(const Deck& deck) {
  const fs::path out = deck.output.dir, checkpoints = checkpoint_dir(deck);
  fs::create_directories(out);
  std::string error = lock(out.string());
  if (!error.empty()) return error;
  remove_stale_temporaries(out, checkpoints);
  // The whole resolved deck beside the results (the screen shows only what differs from the
  // defaults): what this run ran, as a deck that runs it again.
  error = write_file_durably((out / "deck.toml").string(), deck.resolved_toml());
  if (!error.empty()) return error;
  if (!deck.train.resume.empty()) return "";
  const std::vector<fs::path> earlier = checkpoints_in(checkpoints);
  if (earlier.empty()) return "";
  if (!deck.output.overwrite)
    return fmt::format(
        "output.dir = \"{}\" holds the checkpoints of another run ({} files in {}); a fresh run "
        "there would mix its checkpoints with them. Resume that run (--set train.resume=latest), "
        "choose another --out, or --set output.overwrite=true to delete them",
        out.string(), earlier.size(), checkpoints.string());
  for (const fs::path& file : earlier) fs::remove(file);
  log_root("note: output.overwrite = true: removed {} checkpoint files of an earlier run from {}\n",
           earlier.size(), checkpoints.string());
  return "";
}

}  // namespace zm
