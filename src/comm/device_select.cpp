#include "comm/device_select.hpp"

#include <fmt/format.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <map>

#include "comm/agree.hpp"
#include "comm/node_split.hpp"
#include "core/compat.hpp"
#include "core/exit_codes.hpp"
#include "core/log.hpp"

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

namespace zm {

namespace {

constexpr int kIdentityBytes = 96;  // PCI bus ids are 13 bytes; GPU UUIDs and MIG names longer

std::vector<std::string> allgather_identities(MPI_Comm comm, const std::string& mine) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  std::array<char, kIdentityBytes> own{};
  std::strncpy(own.data(), mine.c_str(), kIdentityBytes - 1);
  std::vector<char> all(static_cast<size_t>(size) * kIdentityBytes);
  MPI_Allgather(own.data(), kIdentityBytes, MPI_CHAR, all.data(), kIdentityBytes, MPI_CHAR, comm);
  std::vector<std::string> identities;
  for (int r = 0; r < size; ++r)
    identities.emplace_back(&all[static_cast<size_t>(r) * kIdentityBytes]);
  return identities;
}

}  // namespace

VisibleDevices query_visible_devices() {
  VisibleDevices visible;
#if defined(KOKKOS_ENABLE_CUDA)
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    visible.error = fmt::format("cudaGetDeviceCount: {}", cudaGetErrorString(status));
    return visible;
  }
  for (int d = 0; d < count; ++d) {
    char bus_id[kIdentityBytes] = {};
    if (cudaDeviceGetPCIBusId(bus_id, kIdentityBytes, d) == cudaSuccess)
      visible.identities.emplace_back(bus_id);
    else
      visible.identities.push_back(fmt::format("device {}", d));
  }
  if (count == 0) visible.error = "the CUDA runtime reports no GPU";
#endif
  return visible;
}

NodeDevices plan_node_devices(MPI_Comm comm, const VisibleDevices& visible) {
  NodeComm node(comm);
  NodeDevices plan;
  const int count = static_cast<int>(visible.identities.size());
  plan.device = count > 0 ? node.rank() % count : -1;
  const std::string mine = count > 0 ? visible.identities[static_cast<size_t>(plan.device)] : "";
  plan.node_identities = allgather_identities(node.get(), mine);
  return plan;
}

std::string describe_shared_devices(const std::vector<std::string>& node_identities) {
  std::map<std::string, std::vector<int>> ranks_by_device;
  for (size_t r = 0; r < node_identities.size(); ++r)
    ranks_by_device[node_identities[r]].push_back(static_cast<int>(r));
  for (const auto& [identity, ranks] : ranks_by_device) {
    if (identity.empty()) return fmt::format("local rank {} has no GPU", ranks.front());
    if (ranks.size() > 1)
      return fmt::format("local ranks {} and {} (of {} on this node) share GPU {}", ranks[0],
                         ranks[1], node_identities.size(), identity);
  }
  return "";
}

void start_kokkos_on_local_device(int& argc, char** argv, MPI_Comm comm, Watchdog& watchdog) {
#if defined(KOKKOS_ENABLE_CUDA)
  const VisibleDevices visible = query_visible_devices();
  const NodeDevices plan = plan_node_devices(comm, visible);
  const char* names = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::string problem =
      plan.device >= 0 ? ""
                       : fmt::format(
                             "this CUDA build found no usable GPU ({}; CUDA_VISIBLE_DEVICES={}). "
                             "'zeromini plan', 'schema' and the subcommands that only read files "
                             "run without one",
                             visible.error, names ? names : "unset");
  const Agreement agreement = agree(watchdog, comm, problem, "the GPU check at start-up");
  if (!agreement.ok()) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0)
      log_error("zeromini: error: rank {}: {}\n", agreement.failed_rank, agreement.message);
    MPI_Finalize();
    std::exit(kExitBadInput);
  }
  initialize_kokkos(argc, argv, plan.device);
#else
  (void)comm;
  (void)watchdog;
  initialize_kokkos(argc, argv, 0);
#endif
}

}  // namespace zm
