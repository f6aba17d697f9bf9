#include "comm/device_select.hpp"

#include "comm/node_split.hpp"
#include "core/compat.hpp"

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

namespace zm {

int select_local_device(MPI_Comm comm) {
#if defined(KOKKOS_ENABLE_CUDA)
  const int local_rank = NodeComm(comm).rank();
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < 1) return 0;
  return local_rank % devices;
#else
  (void)comm;
  return 0;
#endif
}

}  // namespace zm
