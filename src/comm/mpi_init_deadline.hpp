// MPI_Init with a bound on its wait. MPICH's launcher, signalled in its first milliseconds, can
// hang with its ranks waiting in MPI_Init for ever (and orphan them when it is killed). A thread
// watches the call: when it has not returned within ZEROMINI_MPI_INIT_TIMEOUT_S seconds (default
// 600), or 5 s after a stop signal reached this process, the rank says why and exits (status 5,
// or 128 + the signal), instead of waiting for a job's time limit.
#pragma once

namespace zm {

// MPI_Init_thread(MPI_THREAD_FUNNELED) under that bound; returns the thread level provided.
int init_mpi_with_deadline(int& argc, char**& argv);

}  // namespace zm
