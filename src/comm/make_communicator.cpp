#include "comm/backend_choice.hpp"
#include "comm/comm_types/mpi_communicator.hpp"
#include "comm/communicator.hpp"
#include "comm/device_select.hpp"
#include "core/log.hpp"

#ifdef ZEROMINI_HAVE_NCCL
#include "comm/comm_types/nccl_communicator.hpp"
#endif

namespace zm {

namespace {
#ifdef ZEROMINI_HAVE_NCCL
constexpr bool kBuildHasNccl = true;
#else
constexpr bool kBuildHasNccl = false;
#endif
}  // namespace

std::unique_ptr<Communicator> make_communicator(const std::string& backend, MPI_Comm comm,
                                                Watchdog& watchdog) {
  std::vector<std::string> node_identities;
  if (kBuildHasNccl && backend != "mpi")
    node_identities = plan_node_devices(comm, query_visible_devices()).node_identities;
  const BackendChoice choice =
      agree_on_backend(watchdog, comm, backend, kBuildHasNccl, node_identities);
  if (!choice.reason.empty())
    log_root("comm.backend auto: {}; using mpi (NCCL needs a GPU per rank)\n", choice.reason);
#ifdef ZEROMINI_HAVE_NCCL
  if (choice.backend == "nccl") return std::make_unique<NcclCommunicator>(comm, watchdog);
#endif
  return std::make_unique<MpiCommunicator>(comm, watchdog);
}

}  // namespace zm
