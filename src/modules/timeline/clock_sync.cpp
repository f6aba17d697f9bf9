#include "modules/timeline/clock_sync.hpp"

#include <limits>

#include "comm/watched_mpi.hpp"
#include "core/timer.hpp"

namespace zm {

namespace {

constexpr int kTag = 7301;  // a tag no other zeromini message uses

void check(int code) {
  if (code != MPI_SUCCESS) abort_on_mpi_error(code, "the clock offset exchange");
}

// Rank 0: answers each request of rank `peer` with its time.
void answer(MPI_Comm comm, int peer, int rounds) {
  for (int k = 0; k < rounds; ++k) {
    double request = 0.0;
    check(MPI_Recv(&request, 1, MPI_DOUBLE, peer, kTag, comm, MPI_STATUS_IGNORE));
    const double now = wall_seconds();
    check(MPI_Send(&now, 1, MPI_DOUBLE, peer, kTag, comm));
  }
}

ClockOffset ask(MPI_Comm comm, int rounds) {
  ClockOffset best;
  double fastest = std::numeric_limits<double>::infinity();
  for (int k = 0; k < rounds; ++k) {
    const double sent = wall_seconds();
    check(MPI_Send(&sent, 1, MPI_DOUBLE, 0, kTag, comm));
    double root_time = 0.0;
    check(MPI_Recv(&root_time, 1, MPI_DOUBLE, 0, kTag, comm, MPI_STATUS_IGNORE));
    const double received = wall_seconds();
    if (received - sent < fastest) {
      fastest = received - sent;
      best.seconds = root_time - 0.5 * (sent + received);
      best.uncertainty = 0.5 * fastest;
    }
  }
  return best;
}

}  // namespace

ClockOffset clock_offset_to_rank0(MPI_Comm comm, int rounds) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  if (rank != 0) return ask(comm, rounds);
  for (int peer = 1; peer < ranks; ++peer) answer(comm, peer, rounds);
  return ClockOffset{};
}

}  // namespace zm
