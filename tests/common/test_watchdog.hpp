// The watchdog of a test executable: owned by test_main.cpp's main() (one per process, since its
// progress slots span MPI_COMM_WORLD, and destroyed after MPI_Finalize), handed to what a test
// builds that blocks (communicators, agreements, file waits).
#pragma once

#include "comm/watchdog.hpp"

namespace zm::testing {

Watchdog& watchdog();

}  // namespace zm::testing
