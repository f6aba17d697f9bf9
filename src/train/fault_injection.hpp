// Fault injection for the fault-behaviour tests (tests/fault). Inert unless the environment sets
// these variables; they exist so that a test can make a real run fail in a controlled place:
//   ZEROMINI_TEST_FAULT_STEP=k   the optimizer step (1-based) at whose start the fault happens
//   ZEROMINI_TEST_FAULT_RANK=r   the rank that misbehaves (default 0)
//   ZEROMINI_TEST_FAULT=kill     the rank kills itself with SIGKILL (a crashed node)
//                      stall    the rank stops forever without leaving (a hung node)
//                      nan      the rank's gradients get a NaN after backward
//                      error    the rank throws an internal error (a bug on one rank: exit 1)
// (ZEROMINI_TEST_CRASH_BEFORE_RENAME in src/io/checkpoint.cpp is the checkpoint-writing fault.)
#pragma once

#include <cstdint>

namespace zm {

enum class Fault { None, Kill, Stall, NaN, Error };

// The fault planned for this rank at the start of `step` (0-based), if any.
Fault injected_fault(int rank, int64_t step);

// Carries out kill, stall and error (does not return); NaN is applied by the trainer.
void enact_fault(Fault fault);

}  // namespace zm
