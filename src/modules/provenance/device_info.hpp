// What this rank computes on and talks through, for the manifest of a run (manifest.hpp).
#pragma once

#include <string>

namespace zm {

// The device this rank's kernels run on: the GPU's name in CUDA builds, else the host CPU's model
// name from /proc/cpuinfo, marked "(host)".
std::string this_device_name();

// The NCCL library's version when built with it (ncclGetVersion), else "not built".
std::string nccl_version();

}  // namespace zm
