// All ranks of a communicator agreeing on the outcome of work each did on its own: success
// everywhere, or the first failing rank's message everywhere.
//
// A rank that fails alone and stops alone leaves the others waiting in their next collective; one
// that throws a message only it can see leaves the others without the cause. So work whose
// failure is local (a file a rank cannot read, a block whose checksum fails on one rank) ends
// with an agreement, after which every rank goes on together or stops together with the same
// message.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string>

namespace zm {

class Watchdog;

// Longest message an agreement carries, in bytes; a longer one is cut to this length.
constexpr size_t kAgreedMessageMax = 1023;

struct Agreement {
  int failed_rank = -1;  // the lowest rank that failed; -1 when every rank succeeded
  std::string message;   // that rank's message, the same on every rank; empty on success
  bool ok() const { return failed_rank < 0; }
};

// Collective over `comm`, under `watchdog`. `error` is this rank's failure, empty when it
// succeeded; `what` names the work for the watchdog ("the checkpoint write").
Agreement agree(Watchdog& watchdog, MPI_Comm comm, const std::string& error,
                const std::string& what = "the outcome of local work");

// agree(), then every rank throws CollectiveError with the first failing rank's message.
void agree_or_fail(Watchdog& watchdog, MPI_Comm comm, const std::string& error,
                   const std::string& what);

}  // namespace zm
