// Process-wide setup of MPI and Kokkos for commands that run on ranks. Devices::None starts MPI
// alone, for commands that only read and write files (on a login node without a GPU).
#pragma once

#include "comm/watchdog.hpp"
#include "core/abort_job.hpp"  // what the commands call on a rank's fatal error

namespace zm {

class Runtime {
 public:
  enum class Devices { Kokkos, None };
  Runtime(int& argc, char**& argv, Devices devices = Devices::Kokkos);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // The rank's watchdog, armed by the command that runs collectives (comm.timeout_s).
  Watchdog& watchdog() { return watchdog_; }

 private:
  Watchdog watchdog_;  // destroyed after MPI_Finalize, which may release it
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace zm
