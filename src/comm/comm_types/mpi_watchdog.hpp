// The MPI backend's watchdog: a wait that lasts longer than the timeout ends the job with a message
// naming the operation and the ranks that have not posted it.
//
// Each rank counts the collectives it posts and publishes the count in RMA windows, so that a rank
// stuck waiting can tell which ranks never arrived. Ranks on this node read each other's counts
// straight from shared memory (no help from a peer that may be hung); ranks on other nodes are
// read with MPI_Get. The windows cost a few collectives to create and free, so only communicators
// that run with a timeout set (a trainer's) have them; waits on others time out without naming
// the missing ranks.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "comm/comm_types/mpi_pending_op.hpp"
#include "comm/node_split.hpp"

namespace zm {

class MpiWatchdog {
 public:
  // Watches the collectives on `comm`, which must outlive it (or release() be called first).
  explicit MpiWatchdog(MPI_Comm comm);
  ~MpiWatchdog();
  MpiWatchdog(const MpiWatchdog&) = delete;
  MpiWatchdog& operator=(const MpiWatchdog&) = delete;

  // Collective over the communicator the first time: creates the windows.
  void set_timeout(double seconds);
  double timeout() const { return timeout_; }

  // Counts a collective being posted and publishes the count; returns its number.
  int64_t next_sequence();

  // Called by a wait that exceeded the timeout: reads every rank's count of posted collectives,
  // names the ranks that have not posted collective number `sequence`, and aborts the job.
  [[noreturn]] void report_timeout(const MpiOpInfo& op, int64_t sequence, double waited) const;

  // Frees the windows (collective); the destructor does it otherwise.
  void release();

 private:
  void create_windows();  // collective
  std::vector<int64_t> node_counts() const;
  void read_remote_counts(std::vector<int64_t>& counts) const;
  void write_last_words(const MpiOpInfo& op, int64_t sequence, double waited,
                        const std::string& missing_here) const;

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  double timeout_ = 300.0;
  int64_t posted_ = 0;
  NodeComm node_;
  MPI_Win node_window_ = MPI_WIN_NULL;                // shared memory among this node's ranks
  MPI_Win posted_window_ = MPI_WIN_NULL;              // the same counts, for ranks on other nodes
  int64_t* posted_count_ = nullptr;                   // this rank's slot in posted_window_
  volatile int64_t* node_count_ = nullptr;            // this rank's slot in node_window_
  std::vector<const volatile int64_t*> peer_counts_;  // by rank in comm_; null when off-node
};

}  // namespace zm
