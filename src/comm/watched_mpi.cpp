#include "comm/watched_mpi.hpp"

#include <fmt/format.h>
#include <sched.h>

#include "comm/watchdog.hpp"
#include "core/abort_job.hpp"

namespace zm {

namespace {

void check(int code, const std::string& what) {
  if (code != MPI_SUCCESS) abort_on_mpi_error(code, what);
}

}  // namespace

void abort_on_mpi_error(int code, const std::string& what) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, text, &length);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const std::string message = fmt::format("zeromini: rank {}: MPI error in {}: {}", rank, what,
                                          std::string(text, static_cast<size_t>(length)));
  abort_job(message.c_str(), 1);
}

void watched_wait(Watchdog& watchdog, MPI_Request& request, const std::string& what,
                  int64_t sequence) {
  int done = 0;
  check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what);
  if (done) return;
  BlockingRegion region(watchdog, what, sequence, WaitKind::Polled);
  for (uint64_t polls = 1; !done; ++polls) {
    check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what);
    // Yield the core now and then, which matters when ranks outnumber cores.
    if (!done && polls % 1024 == 0) {
      sched_yield();
      watchdog.check_deadline();
    }
  }
}

void watched_allreduce(Watchdog& watchdog, const void* send, void* recv, int count,
                       MPI_Datatype type, MPI_Op op, MPI_Comm comm, const std::string& what) {
  MPI_Request request = MPI_REQUEST_NULL;
  const int64_t sequence = watchdog.sequence_for(comm);
  check(MPI_Iallreduce(send, recv, count, type, op, comm, &request), what);
  watched_wait(watchdog, request, what, sequence);
}

void watched_reduce(Watchdog& watchdog, const void* send, void* recv, int count, MPI_Datatype type,
                    MPI_Op op, int root, MPI_Comm comm, const std::string& what) {
  MPI_Request request = MPI_REQUEST_NULL;
  const int64_t sequence = watchdog.sequence_for(comm);
  check(MPI_Ireduce(send, recv, count, type, op, root, comm, &request), what);
  watched_wait(watchdog, request, what, sequence);
}

void watched_bcast(Watchdog& watchdog, void* data, int count, MPI_Datatype type, int root,
                   MPI_Comm comm, const std::string& what) {
  MPI_Request request = MPI_REQUEST_NULL;
  const int64_t sequence = watchdog.sequence_for(comm);
  check(MPI_Ibcast(data, count, type, root, comm, &request), what);
  watched_wait(watchdog, request, what, sequence);
}

void watched_gather(Watchdog& watchdog, const void* send, int count, MPI_Datatype type, void* recv,
                    int root, MPI_Comm comm, const std::string& what) {
  MPI_Request request = MPI_REQUEST_NULL;
  const int64_t sequence = watchdog.sequence_for(comm);
  check(MPI_Igather(send, count, type, recv, count, type, root, comm, &request), what);
  watched_wait(watchdog, request, what, sequence);
}

}  // namespace zm
