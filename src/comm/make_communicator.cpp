#include "comm/backend_choice.hpp"
#include "comm/comm_types/mpi_communicator.hpp"
#include "comm/communicator.hpp"
#include "comm/device_select.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/modules.hpp"

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

// MPI on a device whose memory it cannot read needs DeviceStaging: a build without it refuses
// before the first collective, the same on every rank.
void check_mpi_reaches_the_device() {
  if (device_is_host() || has_device_staging() || mpi_reads_device_memory()) return;
  const std::string option = option_providing("device staging");
  throw CollectiveError(fmt::format(
      "the MPI backend would hand MPI device buffers, which this MPI library does not read, and "
      "this build cannot stage them through host memory: rebuild with {}, use an MPI library "
      "that reads device memory (CUDA-aware), or run one rank per GPU (NCCL)",
      option.empty() ? "host staging of device buffers" : "-D" + option + "=ON"));
}
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
  check_mpi_reaches_the_device();
  return std::make_unique<MpiCommunicator>(comm, watchdog);
}

}  // namespace zm
