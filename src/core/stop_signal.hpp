// SIGTERM and SIGINT: what Slurm sends at a job's time limit, and what a user's Ctrl-C sends.
//
// The first signal asks the run to stop: the ranks agree on it at the end of a step, write a
// checkpoint when checkpoints are configured, flush their results and exit. It is only recorded
// here, in a flag, because a rank is usually inside a kernel or a collective when it arrives. The
// watchdog (src/comm/watchdog.hpp) ends a rank that is blocked in I/O when the signal comes; a
// second signal ends the process at once, from the handler. Copies of the first that arrive
// within 2 s (mpiexec forwards it while the batch system signals every task as well) are the
// same request.
//
// Installed first thing in main(), so that no signal between launch and the first step is lost
// or ends a rank half-way (each would exit differently).
#pragma once

namespace zm {

// Installs the handlers for SIGTERM and SIGINT (idempotent; installing again after a library
// that replaced them restores ours).
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
