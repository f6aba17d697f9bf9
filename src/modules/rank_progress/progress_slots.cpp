#include "modules/rank_progress/progress_slots.hpp"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>

namespace zm {

namespace {

// Seconds the reads of other nodes' counts may take before the last words are all there is.
constexpr unsigned kRemoteReadSeconds = 10;

// What the alarm prints when the remote reads hang. A global, written before the alarm is armed,
// because a signal handler can use nothing else.
char g_last_words[2048];
extern "C" void on_remote_read_alarm(int) {
  const ssize_t ignored = write(2, g_last_words, strnlen(g_last_words, sizeof(g_last_words)));
  (void)ignored;
  _exit(5);  // kExitWatchdog
}

}  // namespace

void ProgressSlots::gather_hosts() {
  char mine[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(mine, &length);
  std::vector<char> all(static_cast<size_t>(size_) * MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(mine, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME,
                MPI_CHAR, comm_);
  hosts_.clear();
  for (int r = 0; r < size_; ++r)
    hosts_.emplace_back(
        &all[static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME],
        strnlen(&all[static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME], MPI_MAX_PROCESSOR_NAME));
}

ProgressSlots::~ProgressSlots() {
  release();
}

void ProgressSlots::create(MPI_Comm comm, int64_t posted) {
  comm_ = comm;
  MPI_Comm_size(comm_, &size_);
  MPI_Win_allocate(sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, comm_, &remote_posted_,
                   &posted_window_);
  *remote_posted_ = posted;
  MPI_Win_lock_all(0, posted_window_);
  node_ = NodeComm(comm_);
  int64_t* own = nullptr;
  MPI_Win_allocate_shared(2 * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, node_.get(), &own,
                          &node_window_);
  own_ = own;
  own_[0] = posted;
  own_[1] = 0;
  // Where each rank of this node keeps its slots, indexed by its rank in comm_.
  peers_.assign(static_cast<size_t>(size_), nullptr);
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
    if (global != MPI_UNDEFINED) peers_[static_cast<size_t>(global)] = slot;
  }
  MPI_Group_free(&group);
  MPI_Group_free(&node_group);
  gather_hosts();
  MPI_Barrier(comm_);
}

void ProgressSlots::forget() {
  own_ = nullptr;
  peers_.clear();
}

void ProgressSlots::release() {
  forget();
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

void ProgressSlots::publish_posted(int64_t posted) {
  if (!ready() || posted_window_ == MPI_WIN_NULL) return;
  // Local stores into this rank's slots; MPI_Win_sync makes the RMA one visible to readers.
  *remote_posted_ = posted;
  MPI_Win_sync(posted_window_);
  own_[0] = posted;
}

void ProgressSlots::beat(int64_t now_ms) {
  if (own_) own_[1] = now_ms;
}

std::vector<int64_t> ProgressSlots::node_posted() const {
  std::vector<int64_t> posted(static_cast<size_t>(size_), -1);
  for (size_t r = 0; r < peers_.size(); ++r)
    if (peers_[r]) posted[r] = peers_[r][0];
  return posted;
}

std::vector<int64_t> ProgressSlots::node_heartbeats() const {
  std::vector<int64_t> beats(static_cast<size_t>(size_), -1);
  for (size_t r = 0; r < peers_.size(); ++r)
    if (peers_[r]) beats[r] = peers_[r][1];
  return beats;
}

void ProgressSlots::read_remote_posted(std::vector<int64_t>& posted, const char* last_words) const {
  std::snprintf(g_last_words, sizeof(g_last_words), "%s", last_words);
  std::signal(SIGALRM, on_remote_read_alarm);
  alarm(kRemoteReadSeconds);
  for (int r = 0; r < size_; ++r)
    if (posted[static_cast<size_t>(r)] < 0)
      MPI_Get(&posted[static_cast<size_t>(r)], 1, MPI_INT64_T, r, 0, 1, MPI_INT64_T,
              posted_window_);
  MPI_Win_flush_all(posted_window_);
  alarm(0);
}

}  // namespace zm
