// SIGTERM and SIGINT: what Slurm sends at a job's time limit, and what a user's Ctrl-C sends.
//
// The first signal asks the run to stop: the ranks agree on it at the end of a step, write a
// checkpoint when configured, flush their results and exit. It is only recorded in a flag, as a
// rank is usually inside a kernel or a collective when it arrives; the watchdog
// (src/comm/watchdog.hpp) ends a rank blocked in I/O. A second signal ends the process at once;
// copies of the first within 2 s (mpiexec forwards it while the batch system signals every task)
// are the same request. Installed first thing in main(), so that no early signal is lost.
#pragma once

namespace zm {

// Installs the handlers (idempotent; again after a library that replaced them restores ours).
void install_stop_signals();

// The first stop signal received (SIGTERM or SIGINT), or 0.
int stop_signal();

// When it came: seconds on CLOCK_MONOTONIC, the clock of wall_seconds() (core/timer.hpp).
double stop_signal_time();

// The signal's name ("SIGTERM"), or "" for 0.
const char* signal_name(int signal);

// For commands that have no step boundary to stop at (every one but run): a signal ends the
// process at once with 128 + signal.
void stop_signals_end_process();

}  // namespace zm
