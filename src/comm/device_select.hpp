// Which GPU each rank uses (`local rank % visible GPUs`), and which ranks of a node share one:
// NCCL refuses two ranks on one GPU, so the ranks of a node exchange the identities (PCI bus ids,
// which match however a rank names the GPU) of the GPUs they took.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace zm {

class Watchdog;

// The GPUs this process can see, and why there are none when the query failed.
struct VisibleDevices {
  std::vector<std::string> identities;
  std::string error;  // e.g. "CUDA driver version is insufficient" (a stub driver); empty if none
};

// None (and no error) in host builds.
VisibleDevices query_visible_devices();

// The GPU this rank takes, and those every rank of its node takes. Collective over `comm`.
struct NodeDevices {
  int device = -1;                           // ordinal among the visible GPUs; -1: none
  std::vector<std::string> node_identities;  // per local rank; "" where a rank has none
};
NodeDevices plan_node_devices(MPI_Comm comm, const VisibleDevices& visible);

// Local ranks that share a GPU, or one without a GPU; "" when every rank has its own.
std::string describe_shared_devices(const std::vector<std::string>& node_identities);

// Starts Kokkos on this rank's GPU (CUDA builds) or on the host threads. Collective over `comm`:
// where a rank has no usable GPU, every rank ends with exit status 2 and the reason, instead of
// an abort inside Kokkos' initialisation.
void start_kokkos_on_local_device(int& argc, char** argv, MPI_Comm comm, Watchdog& watchdog);

}  // namespace zm
