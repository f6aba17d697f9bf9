// The module's registration (core/modules.hpp): the MPI backend's DeviceStaging
// (comm/comm_types/mpi_communicator.hpp), made for each MPI communicator where the device is a
// GPU whose memory the MPI library cannot read.
#include <memory>

#include "comm/comm_types/mpi_communicator.hpp"
#include "core/compat.hpp"
#include "core/log.hpp"
#include "modules/mpi_staging/gpu_aware.hpp"
#include "modules/mpi_staging/host_staging.hpp"

namespace zm {

namespace {

// Where device buffers go, said once per process (communicators are made per shard group too).
void log_device_path(const GpuAwareDecision& decision) {
  static bool said = false;
  if (device_is_host() || said) return;
  said = true;
  log_root("MPI backend: device buffers {} ({})\n",
           decision.aware ? "go to MPI directly" : "are staged through pinned host memory",
           decision.why);
}

std::unique_ptr<DeviceStaging> staging_where_needed() {
  const GpuAwareDecision decision = mpi_gpu_aware();
  log_device_path(decision);
  if (device_is_host() || decision.aware) return nullptr;
  return std::make_unique<HostStaging>();
}

}  // namespace

void register_module_mpi_staging() {
  set_device_staging(staging_where_needed);
}

}  // namespace zm
