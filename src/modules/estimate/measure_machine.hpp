// The machine of this job, for the run's estimate when no --machine file is given: figures
// measured at start-up in well under a second.
#pragma once

#include <cstdint>

#include "plan/machine.hpp"

namespace zm {

class Communicator;

// A short GEMM per compute precision for the sustained rate, a streaming pass for the memory
// bandwidth, a copy to host memory and the host's AdamW for the host side, and all-reduces of
// 4 MiB and of 4 bytes on `comm` for the links' bandwidth and latency (taken for the links inside
// and between nodes alike). Collective over `comm`; the figures are the slowest rank's, so that
// every rank prices the same machine.
Machine measure_machine(Communicator& comm, int64_t nodes);

}  // namespace zm
