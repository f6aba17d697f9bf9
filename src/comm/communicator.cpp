#include "comm/communicator.hpp"

#include "comm/cross_node.hpp"

#include "core/error.hpp"
#include "core/timer.hpp"

namespace zm {

const char* comm_op_name(CommOp op) {
  switch (op) {
    case CommOp::AllReduce:
      return "all_reduce";
    case CommOp::ReduceScatter:
      return "reduce_scatter";
    case CommOp::AllGather:
      return "all_gather";
    case CommOp::Broadcast:
      return "broadcast";
    case CommOp::Barrier:
      return "barrier";
    case CommOp::AllToAll:
      return "all_to_all";
    case CommOp::Count:
      break;
  }
  return "?";
}

size_t dtype_size(DType type) {
  switch (type) {
    case DType::F32:
      return 4;
    case DType::BF16:
      return 2;
    case DType::U8:
      return 1;
  }
  return 0;
}
const char* dtype_name(DType type) {
  switch (type) {
    case DType::F32:
      return "fp32";
    case DType::BF16:
      return "bf16";
    case DType::U8:
      return "bytes";
  }
  return "?";
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

const char* comm_purpose_name(CommPurpose purpose) {
  switch (purpose) {
    case CommPurpose::GradReduce:
      return "grad_reduce";
    case CommPurpose::ParamGather:
      return "param_gather";
    case CommPurpose::Stats:
      return "stats";
    case CommPurpose::ModelParallel:
      return "model_parallel";
    case CommPurpose::Other:
      break;
  }
  return "other";
}

CommRequest::CommRequest(Communicator* owner, CommOp op, std::unique_ptr<detail::PendingOp> pending,
                         int64_t record)
    : owner_(owner), op_(op), pending_(std::move(pending)), record_(record) {
  if (owner_) epoch_ = owner_->epoch_;
}

CommRequest::CommRequest(CommRequest&& other) noexcept {
  *this = std::move(other);
}

CommRequest& CommRequest::operator=(CommRequest&& other) noexcept {
  if (this != &other) {
    if (pending_) wait();
    owner_ = other.owner_;
    op_ = other.op_;
    pending_ = std::move(other.pending_);
    record_ = other.record_;
    epoch_ = other.epoch_;
  }
  return *this;
}

CommRequest::~CommRequest() {
  if (pending_) wait();
}

// Completion as this rank saw it: on the device for stream-ordered backends, else now.
void CommRequest::complete_record(const Stamp& wait_begin, bool waited) {
  Communicator::Record* r = owner_->record(record_, epoch_);
  if (!r || r->complete) return;
  const bool on_device = pending_->stream_ordered();
  r->completed = on_device ? pending_->device_completed : host_stamp();
  if (waited) {
    r->times.waited = true;
    r->wait_begin = wait_begin;
    r->wait_end = on_device ? owner_->clock_.compute_stamp() : r->completed;
  }
  r->complete = true;
  r->pending = nullptr;
}

void CommRequest::wait(bool blocking) {
  if (!pending_) return;
  const Communicator::Record* r = owner_->record(record_, epoch_);
  const bool known_complete = r && r->complete;
  // Where the host blocks, the wait begins now (at the post for a blocking collective); on a
  // stream, when the compute stream reaches it. Unrecorded collectives take no stamps.
  Stamp wait_begin;
  if (r && pending_->stream_ordered())
    wait_begin = owner_->clock_.compute_stamp();
  else if (r)
    wait_begin = blocking ? r->posted : host_stamp();
  const double start = wall_seconds();
  pending_->wait();
  owner_->stats_[op_].seconds += wall_seconds() - start;
  if (!known_complete) complete_record(wait_begin, true);
  pending_.reset();
}

bool CommRequest::test() {
  if (!pending_) return true;
  const double start = wall_seconds();
  const bool done = pending_->test();
  owner_->stats_[op_].seconds += wall_seconds() - start;
  if (done) {
    complete_record(Stamp{}, false);
    pending_.reset();
  }
  return done;
}

Communicator::Record* Communicator::record(int64_t index, uint64_t epoch) {
  if (index < 0 || epoch != epoch_ || !recording_) return nullptr;
  return &records_[static_cast<size_t>(index)];
}

void Communicator::progress() {
  do_progress();
  for (Record& r : records_) {
    if (r.complete || !r.pending || !r.pending->test()) continue;
    r.completed = r.pending->stream_ordered() ? r.pending->device_completed : host_stamp();
    r.complete = true;
    r.pending = nullptr;
  }
}

void Communicator::begin_step_records() {
  clock_.begin_epoch();
  records_.clear();
  ++epoch_;
  recording_ = true;
}

std::vector<CollectiveTimes> Communicator::end_step_records() {
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
  recording_ = false;
  return out;
}

CommRequest Communicator::account(CommOp op, double whole_buffer_bytes, CommTag tag, Stamp before,
                                  std::unique_ptr<detail::PendingOp> pending) {
  CommOpStats& s = stats_[op];
  s.calls += 1;
  const double bytes = ring_bytes(op, whole_buffer_bytes, size());
  s.bytes += bytes;
  const double leaving = cross_node_bytes(op, whole_buffer_bytes, size(), node_span_);
  if (leaving != 0.0) {  // NaN too: a communicator spread unevenly over nodes has no figure
    cross_node_stats_[op].calls += 1;
    cross_node_stats_[op].bytes += leaving;
  }
  const int64_t id = next_id_++;
  if (!recording_) return CommRequest(this, op, std::move(pending), -1);
  Record r;
  r.times.op = op;
  r.times.tag = tag;
  r.times.bytes = bytes;
  r.times.id = id;
  const bool on_device = pending && pending->stream_ordered();
  r.posted = on_device ? pending->device_posted : before;
  if (!pending) {  // complete when posted
    r.completed = r.posted;
    r.complete = true;
  }
  r.pending = pending.get();
  records_.push_back(r);
  return CommRequest(this, op, std::move(pending), static_cast<int64_t>(records_.size()) - 1);
}

CommRequest Communicator::iall_reduce_sum(void* data, size_t count, DType type, CommTag tag) {
  ZM_ASSERT(type != DType::U8, "all_reduce of raw bytes: they have no sum");
  const double bytes = static_cast<double>(count * dtype_size(type));
  const Stamp before = host_stamp();
  return account(CommOp::AllReduce, bytes, tag, before, post_all_reduce(data, count, type));
}

CommRequest Communicator::ireduce_scatter_sum(const void* send, void* recv, size_t recv_count,
                                              DType type, CommTag tag) {
  ZM_ASSERT(type != DType::U8, "reduce_scatter of raw bytes: they have no sum");
  const double bytes = static_cast<double>(recv_count * dtype_size(type)) * size();
  const Stamp before = host_stamp();
  return account(CommOp::ReduceScatter, bytes, tag, before,
                 post_reduce_scatter(send, recv, recv_count, type));
}

CommRequest Communicator::iall_gather(const void* send, void* recv, size_t send_count, DType type,
                                      CommTag tag) {
  const double bytes = static_cast<double>(send_count * dtype_size(type)) * size();
  const Stamp before = host_stamp();
  return account(CommOp::AllGather, bytes, tag, before,
                 post_all_gather(send, recv, send_count, type));
}

CommRequest Communicator::ibroadcast(void* data, size_t count, DType type, int root) {
  const double bytes = static_cast<double>(count * dtype_size(type));
  const Stamp before = host_stamp();
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
  const Stamp before = host_stamp();
  return account(CommOp::AllToAll, bytes, tag, before,
                 post_all_to_all(send, recv, block_count, type));
}

// Blocking: posted, waited for and completed in one interval.
void Communicator::barrier() {
  const Stamp begin = host_stamp();
  const double start = wall_seconds();
  do_barrier();
  stats_[CommOp::Barrier].calls += 1;
  stats_[CommOp::Barrier].seconds += wall_seconds() - start;
  if (!recording_) return;
  Record r;
  r.times.op = CommOp::Barrier;
  r.times.id = next_id_++;
  r.times.waited = true;
  r.posted = r.wait_begin = begin;
  r.completed = r.wait_end = host_stamp();
  r.complete = true;
  records_.push_back(r);
}

}  // namespace zm
