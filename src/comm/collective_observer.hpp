// What a Communicator tells an observer about each collective it posts while observed
// (Communicator::observe): posted, waited for, completed. A module may measure with it (e.g.
// how long collectives were in flight, and how long the rank waited for them); the communicator
// only reports. Ids are the collective's number on its communicator.
#pragma once

#include <cstdint>

#include "comm/communicator.hpp"

namespace zm {

struct PostedCollective {
  int64_t id = 0;
  CommOp op = CommOp::Barrier;
  CommTag tag;
  double bytes = 0.0;         // ring bytes this rank sends (comm/communicator.hpp, ring_bytes)
  double host_seconds = 0.0;  // the host clock (core/timer.hpp) just before the backend posted it
  // Stream-ordered backends (NCCL) run it on a device stream, where the observer's marks say when
  // it began and ended; the rank's waits then block the compute stream, not the host.
  bool stream_ordered = false;
  StreamMark began, ended;
  bool complete = false;  // nothing in flight: the backend completed it when posting it
};

class CollectiveObserver {
 public:
  virtual ~CollectiveObserver() = default;
  // A stream-ordered backend marks `stream` (a cudaStream_t) where a collective begins and where
  // it ends, as it queues them.
  virtual StreamMark mark_stream(void* stream) = 0;
  virtual void posted(const PostedCollective& collective) = 0;
  // Seen complete without a wait (by Communicator::progress or a request's test).
  virtual void completed(int64_t id) = 0;
  // The rank waits for it while it is in flight (`blocking`: a blocking collective, waited for
  // from its post) ...
  virtual void wait_begins(int64_t id, bool blocking) = 0;
  // ... and it completed in that wait.
  virtual void wait_ended(int64_t id) = 0;
};

}  // namespace zm
