#include "modules/provenance/device_info.hpp"

#include <fmt/format.h>

#include <fstream>

#include "core/compat.hpp"

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif
#ifdef ZEROMINI_HAVE_NCCL
#include <nccl.h>
#endif

namespace zm {

namespace {

std::string host_cpu_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos && colon + 2 <= line.size())
        return line.substr(colon + 2) + " (host)";
    }
  return "unknown CPU (host)";
}

}  // namespace

std::string this_device_name() {
#if defined(KOKKOS_ENABLE_CUDA)
  int device = 0;
  cudaDeviceProp properties{};
  if (cudaGetDevice(&device) == cudaSuccess &&
      cudaGetDeviceProperties(&properties, device) == cudaSuccess)
    return properties.name;
#endif
  return host_cpu_name();
}

std::string nccl_version() {
#ifdef ZEROMINI_HAVE_NCCL
  int code = 0;
  if (ncclGetVersion(&code) != ncclSuccess) return "unknown (ncclGetVersion failed)";
  // NCCL >= 2.9 encodes major * 10000 + minor * 100 + patch.
  return fmt::format("{}.{}.{}", code / 10000, code / 100 % 100, code % 100);
#else
  return "not built";
#endif
}

}  // namespace zm
