#include "comm/comm_types/mpi_watchdog.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>

#include "core/abort_job.hpp"

namespace zm {

namespace {

// Last words when the watchdog's own diagnosis cannot complete (a peer that neither answers nor
// dies): printed from a signal handler with write(2), then the process ends. A global, written
// before the alarm is armed, because a signal handler can use nothing else.
char g_timeout_message[1024];
extern "C" void on_diagnosis_alarm(int) {
  const ssize_t ignored =
      write(2, g_timeout_message, strnlen(g_timeout_message, sizeof(g_timeout_message)));
  (void)ignored;
  _exit(1);
}

// Seconds the reads of other nodes' counts may take before the last words are all there is.
constexpr unsigned kDiagnosisSeconds = 10;

void append_rank(std::string& list, int rank) {
  list += (list.empty() ? "" : ", ") + std::to_string(rank);
}

}  // namespace

MpiWatchdog::MpiWatchdog(MPI_Comm comm) : comm_(comm) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

MpiWatchdog::~MpiWatchdog() {
  release();
}

void MpiWatchdog::set_timeout(double seconds) {
  timeout_ = seconds;
  if (posted_window_ == MPI_WIN_NULL) create_windows();
}

void MpiWatchdog::create_windows() {
  MPI_Win_allocate(sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, comm_, &posted_count_,
                   &posted_window_);
  *posted_count_ = posted_;
  MPI_Win_lock_all(0, posted_window_);
  node_ = NodeComm(comm_);
  int64_t* node_slot = nullptr;
  MPI_Win_allocate_shared(sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, node_.get(), &node_slot,
                          &node_window_);
  node_count_ = node_slot;
  *node_count_ = posted_;
  // Where each rank of this node keeps its count, indexed by its rank in comm_.
  peer_counts_.assign(static_cast<size_t>(size_), nullptr);
  MPI_Group group, node_group;
  MPI_Comm_group(comm_, &group);
  MPI_Comm_group(node_.get(), &node_group);
  for (int local = 0; local < node_.size(); ++local) {
    MPI_Aint bytes = 0;
    int unit = 0;
    int64_t* slot = nullptr;
    MPI_Win_shared_query(node_window_, local, &bytes, &unit, &slot);
    int global = 0;
    MPI_Group_translate_ranks(node_group, 1, &local, group, &global);
    if (global != MPI_UNDEFINED) peer_counts_[static_cast<size_t>(global)] = slot;
  }
  MPI_Group_free(&group);
  MPI_Group_free(&node_group);
  MPI_Barrier(comm_);
}

void MpiWatchdog::release() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (posted_window_ != MPI_WIN_NULL) {
    MPI_Win_unlock_all(posted_window_);
    MPI_Win_free(&posted_window_);
  }
  if (node_window_ != MPI_WIN_NULL) MPI_Win_free(&node_window_);
  node_ = NodeComm();  // after the window that lives on it
}

int64_t MpiWatchdog::next_sequence() {
  ++posted_;
  if (posted_window_ == MPI_WIN_NULL) return posted_;
  // Local stores into this rank's slots; MPI_Win_sync makes them visible to readers.
  *posted_count_ = posted_;
  MPI_Win_sync(posted_window_);
  *node_count_ = posted_;
  return posted_;
}

void MpiWatchdog::report_timeout(const MpiOpInfo& op, int64_t sequence, double waited) const {
  if (posted_window_ == MPI_WIN_NULL) {
    const std::string message = fmt::format(
        "zeromini: rank {}: watchdog: {} of {} {} elements has waited {:.0f} s, more than the "
        "timeout of {} s; aborting the job.",
        rank_, op.name, op.count, dtype_name(op.type), waited, timeout_);
    abort_job(message.c_str(), 1);
  }
  // This node's ranks first, from shared memory: no help from them is needed.
  std::vector<int64_t> counts = node_counts();
  std::string missing;
  for (int r = 0; r < size_; ++r)
    if (counts[static_cast<size_t>(r)] >= 0 && counts[static_cast<size_t>(r)] < sequence)
      append_rank(missing, r);
  write_last_words(op, sequence, waited, missing);
  read_remote_counts(counts);
  for (int r = 0; r < size_; ++r)
    if (!peer_counts_[static_cast<size_t>(r)] && counts[static_cast<size_t>(r)] < sequence)
      append_rank(missing, r);
  const std::string message = fmt::format(
      "zeromini: rank {}: watchdog: {} of {} {} elements (collective #{} on this rank) has waited "
      "{:.0f} s, more than comm.timeout_s = {}; ranks still missing (have not posted it): {}. "
      "Aborting the job.",
      rank_, op.name, op.count, dtype_name(op.type), sequence, waited, timeout_,
      !missing.empty() ? missing
                       : std::string("none (all posted; the network or a peer's progress "
                                     "is stuck)"));
  abort_job(message.c_str(), 1);
}

// Every rank's count, by rank: read from shared memory for this node's ranks, -1 for the others.
std::vector<int64_t> MpiWatchdog::node_counts() const {
  std::vector<int64_t> counts(static_cast<size_t>(size_), -1);
  for (int r = 0; r < size_; ++r)
    if (peer_counts_[static_cast<size_t>(r)])
      counts[static_cast<size_t>(r)] = *peer_counts_[static_cast<size_t>(r)];
  return counts;
}

// Fills in the counts of ranks on other nodes through RMA, guarded by an alarm: a diagnosis that
// hangs would defeat the watchdog.
void MpiWatchdog::read_remote_counts(std::vector<int64_t>& counts) const {
  std::signal(SIGALRM, on_diagnosis_alarm);
  alarm(kDiagnosisSeconds);
  for (int r = 0; r < size_; ++r)
    if (counts[static_cast<size_t>(r)] < 0)
      MPI_Get(&counts[static_cast<size_t>(r)], 1, MPI_INT64_T, r, 0, 1, MPI_INT64_T,
              posted_window_);
  MPI_Win_flush_all(posted_window_);
  alarm(0);
}

// What the alarm prints if the reads of other nodes hang: what this node alone can tell.
void MpiWatchdog::write_last_words(const MpiOpInfo& op, int64_t sequence, double waited,
                                   const std::string& missing_here) const {
  std::snprintf(g_timeout_message, sizeof(g_timeout_message),
                "zeromini: rank %d: watchdog: %s of %zu %s elements (collective #%lld) has waited "
                "%.0f s, more than comm.timeout_s = %g; ranks on this node still missing: %s; "
                "ranks on other nodes could not be read. Aborting the job.\n",
                rank_, op.name, op.count, dtype_name(op.type), static_cast<long long>(sequence),
                waited, timeout_, missing_here.empty() ? "none" : missing_here.c_str());
}

}  // namespace zm
