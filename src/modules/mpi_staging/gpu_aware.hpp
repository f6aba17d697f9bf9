// Whether the MPI library reads device (CUDA) memory itself, decided once per communicator: the
// library's own answer (mpi_reads_device_memory, comm/comm_types/mpi_communicator.hpp),
// overridden by the environment variable ZEROMINI_MPI_GPU_AWARE=0|1 (for a library that answers
// wrongly, or to compare the two paths).
#pragma once

#include <string>

namespace zm {

struct GpuAwareDecision {
  bool aware = false;
  std::string why;  // for the log line: "the MPI library reports CUDA support", ...
};

// `library_says`: the library's answer; `override_value`: ZEROMINI_MPI_GPU_AWARE, or nullptr
// when unset. A value other than "0" or "1" is an error (zm::Error).
GpuAwareDecision decide_gpu_aware(bool library_says, const char* override_value);

// The decision for this process: the library's answer and the environment.
GpuAwareDecision mpi_gpu_aware();

}  // namespace zm
