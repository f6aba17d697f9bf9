#include "comm/backend_choice.hpp"

#include "comm/agree.hpp"
#include "comm/device_select.hpp"
#include "core/error.hpp"

namespace zm {

BackendChoice choose_backend(const std::string& requested, bool build_has_nccl,
                             const std::vector<std::string>& node_identities) {
  if (requested != "auto" && requested != "mpi" && requested != "nccl")
    fail("comm.backend = \"{}\": expected \"mpi\", \"nccl\" or \"auto\"", requested);
  if (requested == "mpi") return {"mpi", ""};
  if (!build_has_nccl) {
    if (requested == "auto") return {"mpi", ""};
    fail(
        "comm.backend = \"nccl\": this build has no NCCL backend (it needs a Kokkos with CUDA); "
        "expected \"mpi\" or \"auto\"");
  }
  const std::string shared = describe_shared_devices(node_identities);
  if (shared.empty()) return {"nccl", ""};
  if (requested == "auto") return {"mpi", shared};
  fail(
      "comm.backend = \"nccl\": {}, and NCCL needs a GPU per rank. Set comm.backend = \"mpi\" "
      "(or \"auto\", which picks MPI here), or start one rank per GPU",
      shared);
}

BackendChoice agree_on_backend(Watchdog& watchdog, MPI_Comm comm, const std::string& requested,
                               bool build_has_nccl,
                               const std::vector<std::string>& node_identities) {
  if (requested == "mpi" || !build_has_nccl) return choose_backend(requested, build_has_nccl, {});
  std::string error;
  BackendChoice choice;
  try {
    choice = choose_backend(requested, build_has_nccl, node_identities);
    if (choice.backend == "mpi") error = choice.reason;  // "auto" on a node that shares a GPU
  } catch (const Error& refused) {
    error = refused.what();
  }
  // One node that cannot run NCCL decides for all: the backend must be the same on every rank.
  const Agreement agreement = agree(watchdog, comm, error, "the communication backend");
  if (agreement.ok()) return {"nccl", ""};
  if (requested == "auto")
    return {"mpi", "rank " + std::to_string(agreement.failed_rank) + ": " + agreement.message};
  throw CollectiveError(agreement.message);
}

}  // namespace zm
