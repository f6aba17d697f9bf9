// A run owns its output directory: an advisory lock (flock) held for the whole run, so that a
// second run there is refused with the first one's host and PID; a fresh run is refused where
// another run's checkpoints are (unless output.overwrite); the temporary files a killed run
// left behind (and the files named by add_leftover_file) are removed before anything is written;
// and the resolved deck is written to deck.toml there.
#pragma once

#include <mpi.h>

#include <string>

#include "core/deck.hpp"

namespace zm {

class Watchdog;

class OutputDirectory {
 public:
  // Collective over `comm`, under `watchdog` (rank 0 does the file-system work; every rank learns
  // the outcome).
  // Throws CollectiveError on every rank when the directory cannot be had, naming why.
  OutputDirectory(const Deck& deck, MPI_Comm comm, Watchdog& watchdog);
  ~OutputDirectory();  // releases the lock
  OutputDirectory(const OutputDirectory&) = delete;
  OutputDirectory& operator=(const OutputDirectory&) = delete;

  static constexpr const char* kLockFile = ".zeromini.lock";

 private:
  std::string claim(const Deck& deck);  // rank 0: "" or why the directory cannot be had
  std::string lock(const std::string& dir);
  int lock_fd_ = -1;
};

// A file that a run which ended while writing a checkpoint may leave in the output directory or
// its checkpoints/, under this name: removed, with a note, by the next run that claims it.
void add_leftover_file(std::string name);

}  // namespace zm
