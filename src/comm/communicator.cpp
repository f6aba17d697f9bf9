#include "comm/communicator.hpp"

#include <algorithm>
#include <iterator>

#include "comm/collective_observer.hpp"

#include "core/error.hpp"
#include "core/text.hpp"
#include "core/timer.hpp"

namespace zm {

const char* comm_op_name(CommOp op) {
  static const char* const kNames[] = {"all_reduce", "reduce_scatter", "all_gather",
                                       "broadcast",  "barrier",        "all_to_all"};
  static_assert(std::size(kNames) == kCommOps);
  return enum_name(kNames, op);
}

size_t dtype_size(DType type) {
  static const size_t kSizes[] = {4, 2, 1};
  return kSizes[static_cast<int>(type)];
}
const char* dtype_name(DType type) {
  static const char* const kNames[] = {"fp32", "bf16", "bytes"};
  return enum_name(kNames, type);
}

double ring_bytes(CommOp op, double whole_buffer_bytes, int ranks) {
  const double n = static_cast<double>(ranks);
  switch (op) {
    case CommOp::AllReduce:
      return 2.0 * (n - 1.0) / n * whole_buffer_bytes;
    case CommOp::ReduceScatter:
    case CommOp::AllGather:
    case CommOp::AllToAll:
      return (n - 1.0) / n * whole_buffer_bytes;
    case CommOp::Broadcast:
      return ranks > 1 ? whole_buffer_bytes : 0.0;
    case CommOp::Barrier:
    case CommOp::Count:
      break;
  }
  return 0.0;
}

CommOpStats CommStats::total() const {
  CommOpStats sum;
  for (const auto& op : ops) {
    sum.calls += op.calls;
    sum.bytes += op.bytes;
    sum.seconds += op.seconds;
  }
  return sum;
}

CommStats operator-(const CommStats& after, const CommStats& before) {
  CommStats out;
  for (int op = 0; op < kCommOps; ++op) {
    out.ops[op].calls = after.ops[op].calls - before.ops[op].calls;
    out.ops[op].bytes = after.ops[op].bytes - before.ops[op].bytes;
    out.ops[op].seconds = after.ops[op].seconds - before.ops[op].seconds;
  }
  return out;
}

CommStats& operator+=(CommStats& total, const CommStats& part) {
  for (int op = 0; op < kCommOps; ++op) {
    total.ops[op].calls += part.ops[op].calls;
    total.ops[op].bytes += part.ops[op].bytes;
    total.ops[op].seconds += part.ops[op].seconds;
  }
  return total;
}

CommRequest::CommRequest(Communicator* owner, CommOp op, std::unique_ptr<detail::PendingOp> pending,
                         int64_t observed)
    : owner_(owner), op_(op), pending_(std::move(pending)), observed_(observed) {
  if (owner_) observation_ = owner_->observation_;
}

CommRequest& CommRequest::operator=(CommRequest&& other) noexcept {
  if (this != &other) {
    if (pending_) wait();
    owner_ = other.owner_;
    op_ = other.op_;
    pending_ = std::move(other.pending_);
    observed_ = other.observed_;
    observation_ = other.observation_;
  }
  return *this;
}

void CommRequest::wait(bool blocking) {
  if (!pending_) return;
  // Only a wait for an observed collective still in flight is told (a completed one cost nothing).
  const bool observed = owner_->in_flight(observed_, observation_);
  if (observed)
    for (CollectiveObserver* o : owner_->followers_) o->wait_begins(observed_, blocking);
  const double start = wall_seconds();
  pending_->wait();
  owner_->stats_[op_].seconds += wall_seconds() - start;
  if (observed) owner_->observed_done(observed_, true);
  pending_.reset();
}

bool CommRequest::test() {
  if (!pending_) return true;
  const double start = wall_seconds();
  const bool done = pending_->test();
  owner_->stats_[op_].seconds += wall_seconds() - start;
  if (done) {
    if (owner_->in_flight(observed_, observation_)) owner_->observed_done(observed_, false);
    pending_.reset();
  }
  return done;
}

bool Communicator::in_flight(int64_t id, uint64_t observation) const {
  if (id < 0 || observation != observation_ || followers_.empty()) return false;
  return std::any_of(in_flight_.begin(), in_flight_.end(),
                     [id](const InFlight& f) { return f.id == id; });
}

void Communicator::observed_done(int64_t id, bool waited) {
  const auto same = [id](const InFlight& f) { return f.id == id; };
  in_flight_.erase(std::remove_if(in_flight_.begin(), in_flight_.end(), same), in_flight_.end());
  for (CollectiveObserver* o : followers_) {
    if (waited)
      o->wait_ended(id);
    else
      o->completed(id);
  }
}

void Communicator::progress() {
  do_progress();
  for (size_t i = 0; i < in_flight_.size();) {
    if (in_flight_[i].pending->test())
      observed_done(in_flight_[i].id, false);  // removes entry i
    else
      ++i;
  }
}

void Communicator::observe(CollectiveObserver* observer) {
  observers_.push_back(observer);
  if (observer->follows()) followers_.push_back(observer);
  ++observation_;
  in_flight_.clear();
}

void Communicator::unobserve(CollectiveObserver* observer) {
  for (auto* list : {&observers_, &followers_})
    list->erase(std::remove(list->begin(), list->end(), observer), list->end());
  ++observation_;
  in_flight_.clear();
}

// One follower at most marks streams (the others return no mark).
StreamMark Communicator::mark_stream(void* stream) {
  StreamMark mark;
  for (CollectiveObserver* o : followers_)
    if (mark.id < 0) mark = o->mark_stream(stream);
  return mark;
}

double Communicator::now_if_observed() const {
  return followers_.empty() ? 0.0 : wall_seconds();
}

CommRequest Communicator::account(CommOp op, double whole_buffer_bytes, CommTag tag, double before,
                                  std::unique_ptr<detail::PendingOp> pending) {
  CommOpStats& s = stats_[op];
  s.calls += 1;
  const double bytes = ring_bytes(op, whole_buffer_bytes, size());
  s.bytes += bytes;
  const int64_t id = next_id_++;
  if (observers_.empty()) return CommRequest(this, op, std::move(pending), -1);
  PostedCollective posted{id, op, tag, bytes, whole_buffer_bytes, before};
  posted.complete = !pending;
  if (pending) {
    posted.stream_ordered = pending->stream_ordered();
    posted.began = pending->device_posted;
    posted.ended = pending->device_completed;
    if (!followers_.empty()) in_flight_.push_back({id, pending.get()});
  }
  for (CollectiveObserver* o : observers_) o->posted(posted);
  const bool followed = !posted.complete && !followers_.empty();
  return CommRequest(this, op, std::move(pending), followed ? id : -1);
}

CommRequest Communicator::iall_reduce_sum(void* data, size_t count, DType type, CommTag tag) {
  ZM_ASSERT(type != DType::U8, "all_reduce of raw bytes: they have no sum");
  const double bytes = static_cast<double>(count * dtype_size(type));
  const double before = now_if_observed();
  return account(CommOp::AllReduce, bytes, tag, before, post_all_reduce(data, count, type));
}

CommRequest Communicator::ireduce_scatter_sum(const void* send, void* recv, size_t recv_count,
                                              DType type, CommTag tag) {
  ZM_ASSERT(type != DType::U8, "reduce_scatter of raw bytes: they have no sum");
  const double bytes = static_cast<double>(recv_count * dtype_size(type)) * size();
  const double before = now_if_observed();
  return account(CommOp::ReduceScatter, bytes, tag, before,
                 post_reduce_scatter(send, recv, recv_count, type));
}

CommRequest Communicator::iall_gather(const void* send, void* recv, size_t send_count, DType type,
                                      CommTag tag) {
  const double bytes = static_cast<double>(send_count * dtype_size(type)) * size();
  const double before = now_if_observed();
  return account(CommOp::AllGather, bytes, tag, before,
                 post_all_gather(send, recv, send_count, type));
}

CommRequest Communicator::ibroadcast(void* data, size_t count, DType type, int root) {
  const double bytes = static_cast<double>(count * dtype_size(type));
  const double before = now_if_observed();
  return account(CommOp::Broadcast, bytes, {}, before, post_broadcast(data, count, type, root));
}

CommRequest Communicator::iall_to_all(const void* send, void* recv, size_t block_count, DType type,
                                      CommTag tag) {
  const size_t block_bytes = block_count * dtype_size(type);
  ZM_ASSERT(
      block_count == 0 ||
          static_cast<const char*>(send) + block_bytes * size() <= static_cast<const char*>(recv) ||
          static_cast<const char*>(recv) + block_bytes * size() <= static_cast<const char*>(send),
      "all_to_all: send and recv overlap");
  const double bytes = static_cast<double>(block_bytes) * size();
  const double before = now_if_observed();
  return account(CommOp::AllToAll, bytes, tag, before,
                 post_all_to_all(send, recv, block_count, type));
}

// Posted, waited for and completed in one interval; told to the followers only (it moves no data).
void Communicator::barrier() {
  const double start = wall_seconds();
  int64_t id = -1;
  if (!followers_.empty()) id = next_id_++;
  for (CollectiveObserver* o : followers_) {
    o->posted({id, CommOp::Barrier, {}, 0.0, 0.0, start});
    o->wait_begins(id, true);
  }
  do_barrier();
  stats_[CommOp::Barrier].calls += 1;
  stats_[CommOp::Barrier].seconds += wall_seconds() - start;
  for (CollectiveObserver* o : followers_) o->wait_ended(id);
}

}  // namespace zm
