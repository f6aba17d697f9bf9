// Which GPU each rank uses, and which ranks of a node share one.
//
// A rank takes the GPU `local rank % visible GPUs`. Whether the node's ranks then each have a GPU
// of their own decides whether NCCL can run at all (it refuses two ranks on one GPU), so the
// ranks of a node exchange the identities of the GPUs they took. The identities come from the
// CUDA runtime (PCI bus ids: two ranks that name one GPU differently still match) in CUDA builds;
// from CUDA_VISIBLE_DEVICES where a host test models that view (tests/comm/test_backend_choice).
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

// What the CUDA runtime reports in CUDA builds; no devices (and no error) in host builds.
VisibleDevices query_visible_devices();

// The GPU this rank takes on its node and those every rank of the node takes. Collective over
// `comm` (the ranks of the node are found with MPI's shared-memory split).
struct NodeDevices {
  int device = -1;                           // ordinal among the visible GPUs; -1: none
  std::vector<std::string> node_identities;  // per local rank; "" where a rank has none
};
NodeDevices plan_node_devices(MPI_Comm comm, const VisibleDevices& visible);

// Local ranks that share a GPU: "ranks 0 and 1 share GPU 0000:19:00.0", or "" when every rank
// has one of its own. A rank without a GPU is reported too.
std::string describe_shared_devices(const std::vector<std::string>& node_identities);

// Starts Kokkos on this rank's GPU (CUDA builds) or on the host threads. Collective over `comm`
// (the GPU check is an agreement under `watchdog`).
// A CUDA build where no rank's GPU can be used ends every rank with exit status 2 and the
// reason, instead of an abort inside Kokkos' initialisation.
void start_kokkos_on_local_device(int& argc, char** argv, MPI_Comm comm, Watchdog& watchdog);

}  // namespace zm
