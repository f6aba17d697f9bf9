#include "modules/timeline/collective_records.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/timer.hpp"

namespace zm {

// A step cut short (an exception through the step's hooks): the communicator observes no more.
CollectiveRecorder::~CollectiveRecorder() {
  if (comm_) comm_->unobserve(this);
}

void CollectiveRecorder::begin(Communicator& comm) {
  clock_.begin_epoch();
  records_.clear();
  first_mark_ += static_cast<int64_t>(marks_.size());
  marks_.clear();
  comm_ = &comm;
  comm.observe(this);
}

std::vector<CollectiveTimes> CollectiveRecorder::end() {
  if (comm_) comm_->unobserve(this);
  comm_ = nullptr;
  std::vector<CollectiveTimes> out;
  out.reserve(records_.size());
  for (Record& r : records_) {
    // A collective still in flight belongs to no step's figures (none is, in the stages' steps).
    if (!r.complete) continue;
    CollectiveTimes t = r.times;
    t.posted = clock_.resolve(r.posted);
    t.completed = clock_.resolve(r.completed);
    if (t.waited) {
      t.wait_begin = clock_.resolve(r.wait_begin);
      t.wait_end = clock_.resolve(r.wait_end);
    }
    out.push_back(t);
  }
  records_.clear();
  return out;
}

StreamMark CollectiveRecorder::mark_stream(void* stream) {
  marks_.push_back(clock_.stream_stamp(stream));
  return StreamMark{first_mark_ + static_cast<int64_t>(marks_.size()) - 1};
}

Stamp CollectiveRecorder::marked(StreamMark mark) const {
  ZM_ASSERT(mark.id >= first_mark_ && mark.id - first_mark_ < static_cast<int64_t>(marks_.size()),
            "a stream mark {} of another step", mark.id);
  return marks_[static_cast<size_t>(mark.id - first_mark_)];
}

CollectiveRecorder::Record& CollectiveRecorder::record(int64_t id) {
  auto found = std::lower_bound(records_.begin(), records_.end(), id,
                                [](const Record& r, int64_t v) { return r.times.id < v; });
  ZM_ASSERT(found != records_.end() && found->times.id == id, "collective {} was not recorded", id);
  return *found;
}

void CollectiveRecorder::posted(const PostedCollective& c) {
  Record r;
  r.times.op = c.op;
  r.times.tag = c.tag;
  r.times.bytes = c.bytes;
  r.times.id = c.id;
  r.stream_ordered = c.stream_ordered;
  r.posted = c.stream_ordered ? marked(c.began) : Stamp{c.host_seconds, -1, 0, nullptr};
  if (c.stream_ordered) r.device_completed = marked(c.ended);
  if (c.complete) {
    r.completed = r.posted;
    r.complete = true;
  }
  records_.push_back(r);
}

// Completion as this rank saw it: on the device for stream-ordered backends, else now.
void CollectiveRecorder::completed(int64_t id) {
  Record& r = record(id);
  r.completed = r.stream_ordered ? r.device_completed : host_stamp();
  r.complete = true;
}

// Where the host blocks, the wait begins now (at the post for a blocking collective); on a
// stream, when the compute stream reaches it.
void CollectiveRecorder::wait_begins(int64_t id, bool blocking) {
  Record& r = record(id);
  if (r.stream_ordered)
    r.wait_begin = clock_.compute_stamp();
  else
    r.wait_begin = blocking ? r.posted : host_stamp();
}

void CollectiveRecorder::wait_ended(int64_t id) {
  Record& r = record(id);
  r.completed = r.stream_ordered ? r.device_completed : host_stamp();
  r.times.waited = true;
  r.wait_end = r.stream_ordered ? clock_.compute_stamp() : r.completed;
  r.complete = true;
}

MeshRecorder::MeshRecorder(const MeshComms& comms) : comms_(comms) {
  for (size_t i = 0; i < comms.members().size(); ++i)
    recorders_.push_back(std::make_unique<CollectiveRecorder>());
}

void MeshRecorder::begin() {
  for (size_t i = 0; i < recorders_.size(); ++i) recorders_[i]->begin(*comms_.members()[i].comm);
}

std::vector<CollectiveTimes> MeshRecorder::end() {
  std::vector<CollectiveTimes> all;
  for (size_t i = 0; i < recorders_.size(); ++i)
    for (CollectiveTimes& c : recorders_[i]->end()) {
      c.inter_group = comms_.members()[i].level == CommLevel::InterGroup;
      all.push_back(c);
    }
  if (recorders_.size() > 1) {
    std::stable_sort(
        all.begin(), all.end(),
        [](const CollectiveTimes& a, const CollectiveTimes& b) { return a.posted < b.posted; });
    for (size_t i = 0; i < all.size(); ++i) all[i].id = static_cast<int64_t>(i);
  }
  return all;
}

}  // namespace zm
