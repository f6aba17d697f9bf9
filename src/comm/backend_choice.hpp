// Which Communicator backend a run gets for comm.backend = "auto" | "mpi" | "nccl".
//
// NCCL needs a GPU per rank: it refuses two ranks on one GPU (and a rank without one), while MPI
// works however the ranks share GPUs. So "auto" is NCCL only where every rank of every node has
// a GPU of its own, and an explicit "nccl" that cannot work stops before NCCL is initialised.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace zm {

class Watchdog;

struct BackendChoice {
  std::string backend;  // "mpi" or "nccl"
  std::string reason;   // why "auto" did not pick NCCL in a build that has it; else empty
};

// The choice on one node, from the GPU identities of its ranks (NodeDevices::node_identities).
// Throws Error for "nccl" where it cannot work, and for an unknown backend.
BackendChoice choose_backend(const std::string& requested, bool build_has_nccl,
                             const std::vector<std::string>& node_identities);

// The choice every rank of `comm` makes together: NCCL only if every node can run it. Collective
// over `comm`, under `watchdog`, when the build has NCCL and the request is "auto" or "nccl";
// `node_identities` is then this rank's node's view.
BackendChoice agree_on_backend(Watchdog& watchdog, MPI_Comm comm, const std::string& requested,
                               bool build_has_nccl,
                               const std::vector<std::string>& node_identities);

}  // namespace zm
