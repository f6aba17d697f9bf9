#include "comm/comm_types/mpi_gpu_aware.hpp"

#include <mpi.h>

#include <cstdlib>
#include <cstring>

#include "core/compat.hpp"
#include "core/error.hpp"

// Open MPI declares its CUDA query in mpi-ext.h; MPICH >= 4 in mpi.h.
#if defined(OPEN_MPI) && OPEN_MPI && __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

namespace zm {

namespace {

bool library_reads_cuda_memory() {
#if defined(KOKKOS_ENABLE_CUDA)
#if defined(MPICH_NUMVERSION) && MPICH_NUMVERSION >= 40000000
  return MPIX_Query_cuda_support() == 1;
#elif defined(OPEN_MPI) && defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#endif
#endif
  return false;
}

}  // namespace

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
  return decide_gpu_aware(library_reads_cuda_memory(), std::getenv("ZEROMINI_MPI_GPU_AWARE"));
}

}  // namespace zm
