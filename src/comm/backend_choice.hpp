// Which backend a run gets for comm.backend = "auto" | "mpi" | "nccl". NCCL needs a GPU per rank,
// so "auto" is NCCL only where every rank has its own, and a "nccl" that cannot work stops before
// NCCL is initialised.
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

// The choice on one node, from its ranks' GPU identities. Throws Error where it cannot be made.
BackendChoice choose_backend(const std::string& requested, bool build_has_nccl,
                             const std::vector<std::string>& node_identities);

// The choice every rank of `comm` makes together: NCCL only if every node can run it (collective
// when the build has NCCL and the request is "auto" or "nccl").
BackendChoice agree_on_backend(Watchdog& watchdog, MPI_Comm comm, const std::string& requested,
                               bool build_has_nccl,
                               const std::vector<std::string>& node_identities);

}  // namespace zm
