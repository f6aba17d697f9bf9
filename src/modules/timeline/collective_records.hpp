// A step's collectives as they ran on this rank, recorded by observing the communicators
// (comm/collective_observer.hpp): when each was posted and completed, and when the rank blocked
// on it. The exposure figures (exposure.hpp) and the timeline's communication track are made
// from them.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "comm/collective_observer.hpp"
#include "comm/mesh_comms.hpp"
#include "modules/timeline/stamp_clock.hpp"

namespace zm {

// One collective of a step as it ran on this rank: posted, completed, and the interval the rank
// blocked on it (`waited`: it was not complete when waited for). Times in seconds on this rank's
// clock; on GPUs, in stream order.
struct CollectiveTimes {
  CommOp op = CommOp::Barrier;
  CommTag tag;
  double bytes = 0.0;  // ring bytes sent by this rank
  int64_t id = 0;      // the collective's number on this rank
  double posted = 0.0, completed = 0.0;
  bool waited = false;
  double wait_begin = 0.0, wait_end = 0.0;
  bool inter_group = false;  // across shard groups (comm/mesh_comms.hpp)
};

// One communicator's collectives from begin() to end(), stamped on a clock of the recorder's
// own: its epochs are this communicator's steps, so that another communicator's step never cuts
// its stamps. Collectives outside a step (checkpoints, set-up) are not recorded.
class CollectiveRecorder final : public CollectiveObserver {
 public:
  CollectiveRecorder() = default;
  ~CollectiveRecorder() override;
  CollectiveRecorder(const CollectiveRecorder&) = delete;
  CollectiveRecorder& operator=(const CollectiveRecorder&) = delete;

  // Starts a new epoch of the recorder's clock (fences) and observes `comm`.
  void begin(Communicator& comm);
  // Stops observing; returns the step's collectives that completed, in seconds.
  std::vector<CollectiveTimes> end();

  StreamMark mark_stream(void* stream) override;
  void posted(const PostedCollective& collective) override;
  void completed(int64_t id) override;
  void wait_begins(int64_t id, bool blocking) override;
  void wait_ended(int64_t id) override;

 private:
  // A recorded collective, in flight or done. Stamps stay unresolved until the step ends.
  struct Record {
    CollectiveTimes times;
    Stamp posted, completed, wait_begin, wait_end;
    Stamp device_completed;  // stream-ordered: where its stream completes it
    bool stream_ordered = false;
    bool complete = false;
  };
  Record& record(int64_t id);
  Stamp marked(StreamMark mark) const;

  Communicator* comm_ = nullptr;
  StampClock clock_;
  std::vector<Stamp> marks_;  // this step's stream marks: mark id first_mark_ + i is marks_[i]
  int64_t first_mark_ = 0;
  std::vector<Record> records_;  // in the order of posting (increasing ids)
};

// A step's collectives over every communicator of a mesh.
class MeshRecorder {
 public:
  explicit MeshRecorder(const MeshComms& comms);
  void begin();
  // Merged in the order of posting and numbered again (so that ids stay unique on this rank);
  // those along `replicate` marked inter-group.
  std::vector<CollectiveTimes> end();

 private:
  const MeshComms& comms_;
  std::vector<std::unique_ptr<CollectiveRecorder>> recorders_;  // one per member
};

}  // namespace zm
