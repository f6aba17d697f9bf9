// Process-wide setup of MPI and Kokkos for commands that run on ranks (run, inspect, export).
#pragma once

#include "core/abort_job.hpp"  // what the commands call on a rank's fatal error

namespace zm {

class Runtime {
 public:
  Runtime(int& argc, char**& argv);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

 private:
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace zm
