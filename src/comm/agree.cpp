#include "comm/agree.hpp"

#include <algorithm>
#include <vector>

#include "comm/watched_mpi.hpp"
#include "core/error.hpp"

namespace zm {

Agreement agree(Watchdog& watchdog, MPI_Comm comm, const std::string& error,
                const std::string& what) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // The lowest failing rank, or `size` when none failed: one reduction settles both whether and
  // who, and only a failure costs the broadcast of a message.
  const int mine = error.empty() ? size : rank;
  int first = size;
  watched_allreduce(watchdog, &mine, &first, 1, MPI_INT, MPI_MIN, comm, "agreement on " + what);
  Agreement agreement;
  if (first == size) return agreement;
  std::vector<char> text(kAgreedMessageMax + 1, '\0');
  if (rank == first)
    std::copy_n(error.begin(), std::min(error.size(), kAgreedMessageMax), text.begin());
  watched_bcast(watchdog, text.data(), static_cast<int>(text.size()), MPI_CHAR, first, comm,
                "the failure message of " + what);
  agreement.failed_rank = first;
  agreement.message = text.data();
  return agreement;
}

void agree_or_fail(Watchdog& watchdog, MPI_Comm comm, const std::string& error,
                   const std::string& what) {
  const Agreement outcome = agree(watchdog, comm, error, what);
  if (!outcome.ok()) throw CollectiveError(outcome.message);
}

}  // namespace zm
