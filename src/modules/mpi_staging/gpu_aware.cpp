#include "modules/mpi_staging/gpu_aware.hpp"

#include <cstdlib>
#include <cstring>

#include "comm/comm_types/mpi_communicator.hpp"
#include "core/error.hpp"

namespace zm {

GpuAwareDecision decide_gpu_aware(bool library_says, const char* override_value) {
  if (override_value == nullptr || *override_value == '\0')
    return {library_says, library_says ? "the MPI library reports CUDA support"
                                       : "the MPI library reports no CUDA support"};
  if (std::strcmp(override_value, "1") == 0) return {true, "ZEROMINI_MPI_GPU_AWARE=1"};
  if (std::strcmp(override_value, "0") == 0) return {false, "ZEROMINI_MPI_GPU_AWARE=0"};
  fail(
      "ZEROMINI_MPI_GPU_AWARE is '{}'; expected 0 (stage device buffers through host memory) or "
      "1 (hand device buffers to MPI)",
      override_value);
}

GpuAwareDecision mpi_gpu_aware() {
  return decide_gpu_aware(mpi_reads_device_memory(), std::getenv("ZEROMINI_MPI_GPU_AWARE"));
}

}  // namespace zm
