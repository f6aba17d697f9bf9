// Fault injection for the fault tests (tests/fault), in the I/O paths. Inert unless the
// environment names one of these in ZEROMINI_TEST_FAULT (with ZEROMINI_TEST_FAULT_STEP=k, the
// step after which the write happens, and ZEROMINI_TEST_FAULT_RANK=r, default 0):
//   enospc_checkpoint   the checkpoint write after step k fails with ENOSPC: for r = 0 in the
//                       space check before it, for r > 0 in rank r's part of the data
//   enospc_results      rank 0's results write after step k fails with ENOSPC
//   stall_checkpoint    rank r stops (SIGSTOP, as a stopped or hung node) in that checkpoint write
//   stall_gather        rank r stops in the results gather of step k
// Used where a real full disk cannot be had (a test that may not mount a small tmpfs).
#pragma once

#include <cstdint>

namespace zm {

// Whether fault `kind` is planned for `rank` at step `step` (1-based: after `step` steps).
bool io_fault_planned(const char* kind, int rank, int64_t step);

// Stops this process as a whole (SIGSTOP): its watchdog thread stops beating too.
void stop_this_process(const char* where);

}  // namespace zm
