// What a Communicator tells its observers (Communicator::observe) of each collective: posted,
// waited for, completed; a module measures with it. Ids number the collectives of a communicator.
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
  // The host clock just before the backend posted it (0 where no observer follows).
  double host_seconds = 0.0;
  // On a device stream (NCCL), where the observer's marks say when it began and ended.
  bool stream_ordered = false;
  StreamMark began{}, ended{};
  bool complete = false;  // nothing in flight: the backend completed it when posting it
};

class CollectiveObserver {
 public:
  virtual ~CollectiveObserver() = default;
  virtual void posted(const PostedCollective& collective) = 0;
  // Whether it follows the collectives after their post (stream marks, waits, completions,
  // barriers). One that does not costs no clock and no test, and is told of the posts only.
  virtual bool follows() const { return true; }
  // A stream-ordered backend's `stream` (cudaStream_t) where a collective begins and ends (one
  // follower at most marks).
  virtual StreamMark mark_stream(void* /*stream*/) { return {}; }
  // Seen complete without a wait (by Communicator::progress or a request's test).
  virtual void completed(int64_t id) { (void)id; }
  // The rank waits for it while it is in flight (`blocking`: a blocking collective, waited for
  // from its post) ...
  virtual void wait_begins(int64_t id, bool blocking) { (void)id, (void)blocking; }
  // ... and it completed in that wait.
  virtual void wait_ended(int64_t id) { (void)id; }
};

}  // namespace zm
