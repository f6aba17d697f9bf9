// All ranks of a communicator agreeing on the outcome of work each did on its own: success
// everywhere, or the first failing rank's message everywhere. A rank that failed and stopped
// alone would leave the others waiting, without the cause.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string>

namespace zm {

class Watchdog;

// Longest message an agreement carries, in bytes (a longer one is cut).
constexpr size_t kAgreedMessageMax = 1023;

struct Agreement {
  int failed_rank = -1;  // the lowest rank that failed; -1 when every rank succeeded
  std::string message;   // that rank's message, the same on every rank; empty on success
  bool ok() const { return failed_rank < 0; }
};

// Collective over `comm`. `error`: this rank's failure, empty on success; `what` names the work.
Agreement agree(Watchdog& watchdog, MPI_Comm comm, const std::string& error,
                const std::string& what = "the outcome of local work");

// agree(), then every rank throws CollectiveError with the first failing rank's message.
void agree_or_fail(Watchdog& watchdog, MPI_Comm comm, const std::string& error,
                   const std::string& what);

}  // namespace zm
