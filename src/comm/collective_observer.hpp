// What a Communicator tells its observers about each collective it posts while observed
// (Communicator::observe, any number of them): posted, waited for, completed. A module may
// measure with it (e.g. how long collectives were in flight, and how long the rank waited for
// them, or what they sent); the communicator only reports. Ids are the collective's number on its
// communicator.
#pragma once

#include <cstdint>

#include "comm/communicator.hpp"

namespace zm {

struct PostedCollective {
  int64_t id = 0;
  CommOp op = CommOp::Barrier;
  CommTag tag;
  double bytes = 0.0;  // ring bytes this rank sends (comm/communicator.hpp, ring_bytes)
  double whole_buffer_bytes = 0.0;  // S of ring_bytes: the whole buffer
  // The host clock (core/timer.hpp) just before the backend posted it (0 where no observer
  // follows).
  double host_seconds = 0.0;
  // Stream-ordered backends (NCCL) run it on a device stream, where the observer's marks say when
  // it began and ended; the rank's waits then block the compute stream, not the host.
  bool stream_ordered = false;
  StreamMark began, ended;
  bool complete = false;  // nothing in flight: the backend completed it when posting it
};

class CollectiveObserver {
 public:
  virtual ~CollectiveObserver() = default;
  virtual void posted(const PostedCollective& collective) = 0;
  // Whether it follows the collectives after their post: stream marks, waits and completions,
  // and barriers. One that does not (a count of what was posted) costs the communicator no
  // clock and no test of what is in flight, and is told of the posts of data only.
  virtual bool follows() const { return true; }
  // A stream-ordered backend marks `stream` (a cudaStream_t) where a collective begins and where
  // it ends, as it queues them (one follower of a communicator at most marks).
  virtual StreamMark mark_stream(void* stream) {
    (void)stream;
    return {};
  }
  // Seen complete without a wait (by Communicator::progress or a request's test).
  virtual void completed(int64_t id) { (void)id; }
  // The rank waits for it while it is in flight (`blocking`: a blocking collective, waited for
  // from its post) ...
  virtual void wait_begins(int64_t id, bool blocking) { (void)id, (void)blocking; }
  // ... and it completed in that wait.
  virtual void wait_ended(int64_t id) { (void)id; }
};

}  // namespace zm
