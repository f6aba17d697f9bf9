// Where the ranks of a job publish their progress for the watchdog (watchdog.hpp): per rank, the
// number of collectives it has reached and a heartbeat its watchdog thread renews.
//
// Ranks on this node read each other's slots straight from shared memory, with no MPI call and
// no help from a peer that may be hung, so the watchdog's own thread can read them. The counts of
// ranks on other nodes are read with MPI_Get, which only the main thread may call (MPI runs
// THREAD_FUNNELED). A rank whose count is below a collective's number has not reached it; a rank
// whose heartbeat has stopped is stopped or hung as a whole process (SIGSTOP, a node in trouble).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "comm/node_split.hpp"

namespace zm {

class ProgressSlots {
 public:
  ProgressSlots() = default;
  ~ProgressSlots();
  ProgressSlots(const ProgressSlots&) = delete;
  ProgressSlots& operator=(const ProgressSlots&) = delete;

  // Collective over `comm`, which must outlive the slots (or release() be called first).
  void create(MPI_Comm comm, int64_t posted);
  // Stops all use of the windows by this object (local; another thread may still be reading
  // through it until then, so the caller serialises the two).
  void forget();
  // Collective: frees the windows (forget() first).
  void release();
  bool ready() const { return own_ != nullptr; }
  int size() const { return size_; }
  // The host name (MPI_Get_processor_name) of each rank of the communicator, read at create():
  // a message about a rank that no longer answers can still say which node it is on.
  const std::string& host(int rank) const { return hosts_[static_cast<size_t>(rank)]; }
  bool spans_nodes() const { return node_.size() < size_; }

  // This rank's count of collectives reached, made visible to all.
  void publish_posted(int64_t posted);
  // This rank's heartbeat (milliseconds on the node's monotonic clock).
  void beat(int64_t now_ms);

  // By rank of the communicator: -1 for ranks on other nodes.
  std::vector<int64_t> node_posted() const;
  std::vector<int64_t> node_heartbeats() const;
  // Main thread only: fills in the counts that node_posted() left at -1, through RMA; guarded by
  // an alarm that ends the process with `last_words` if the reads hang.
  void read_remote_posted(std::vector<int64_t>& posted, const char* last_words) const;

 private:
  void gather_hosts();  // collective over comm_

  MPI_Comm comm_ = MPI_COMM_NULL;
  int size_ = 1;
  NodeComm node_;
  MPI_Win node_window_ = MPI_WIN_NULL;          // shared memory among this node's ranks
  MPI_Win posted_window_ = MPI_WIN_NULL;        // the counts, for ranks on other nodes
  int64_t* remote_posted_ = nullptr;            // this rank's slot in posted_window_
  volatile int64_t* own_ = nullptr;             // this rank's {posted, heartbeat} in node_window_
  std::vector<const volatile int64_t*> peers_;  // by rank in comm_; null when off-node
  std::vector<std::string> hosts_;              // by rank in comm_
};

}  // namespace zm
