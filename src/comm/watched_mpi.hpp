// Raw MPI collectives under the watchdog: posted non-blocking and polled, like the Communicator's.
// `what` names the operation in the watchdog's message ("agreement on the checkpoint write").
#pragma once

#include <mpi.h>

#include <string>

namespace zm {

class Watchdog;

// Ends the job: MPI returned `code` in `what`. Returning would leave the other ranks waiting.
[[noreturn]] void abort_on_mpi_error(int code, const std::string& what);

// Waits for `request`, posted as the collective numbered `sequence` (Watchdog::sequence_for).
void watched_wait(Watchdog& watchdog, MPI_Request& request, const std::string& what,
                  int64_t sequence);

void watched_allreduce(Watchdog& watchdog, const void* send, void* recv, int count,
                       MPI_Datatype type, MPI_Op op, MPI_Comm comm, const std::string& what);
void watched_reduce(Watchdog& watchdog, const void* send, void* recv, int count, MPI_Datatype type,
                    MPI_Op op, int root, MPI_Comm comm, const std::string& what);
void watched_bcast(Watchdog& watchdog, void* data, int count, MPI_Datatype type, int root,
                   MPI_Comm comm, const std::string& what);
void watched_gather(Watchdog& watchdog, const void* send, int count, MPI_Datatype type, void* recv,
                    int root, MPI_Comm comm, const std::string& what);

}  // namespace zm
