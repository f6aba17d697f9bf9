#include "zero/replica_gather.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/compat.hpp"
#include "zero/int8_gather.hpp"
#include "zero/schedule_execution.hpp"

namespace zm {

namespace {

int packed_buffers(const ZeroOptions& options) {
  return options.overlap ? 2 : 1;
}

}  // namespace

bool quantizes_replica_gather(const ZeroOptions& options, const ZeroMesh& mesh) {
  return mesh.hpz() && options.quantize_weights && options.policy.mixed();
}

std::vector<BufferSpec> replica_gather_buffers(const Partition& partition,
                                               const ZeroOptions& options) {
  int64_t largest = 0;
  for (int u = 0; u < partition.num_units(); ++u)
    largest = std::max(largest,
                       int8_segment(partition.unit(u).sub_shard, options.quantize_block).bytes());
  std::vector<BufferSpec> buffers;
  for (int i = 0; i < packed_buffers(options); ++i)
    buffers.push_back({fmt::format("replica_gather_int8.{}", i), MemCategory::CommBuffers,
                       partition.sub_shards() * largest, 1});
  return buffers;
}

template <typename Real>
QuantizedReplicaGather<Real>::QuantizedReplicaGather(const Partition& partition,
                                                     const ZeroOptions& options,
                                                     Communicator& replicas,
                                                     kernels::TeamShape shape, MemoryLedger* ledger)
    : partition_(partition), block_(options.quantize_block), replicas_(replicas), shape_(shape) {
  const std::vector<BufferSpec> specs = replica_gather_buffers(partition, options);
  PlannedAllocator alloc(specs, ledger);
  for (const BufferSpec& spec : specs) packed_.push_back(alloc.take<uint8_t>(spec.name));
  alloc.finish();
  in_flight_.resize(packed_.size());
}

template <typename Real>
QuantizedReplicaGather<Real>::~QuantizedReplicaGather() {
  for (InFlight& gather : in_flight_) gather.request = CommRequest();  // waits, before the buffers
}

template <typename Real>
void QuantizedReplicaGather<Real>::post(const ScheduledCollective& c, ZeroEngineT<Real>& engine,
                                        Real* shard) {
  InFlight& gather = in_flight_[next_];
  if (gather.unit >= 0) complete(gather, false);  // its buffer is needed again
  Real* own = shard + replicas_.rank() * partition_.unit(c.unit).sub_shard;
  gather.request = post_scheduled(c, engine, {own, shard, nullptr, packed_[next_].data()});
  gather.unit = c.unit;
  gather.shard = shard;
  if (c.blocking()) complete(gather, true);
  next_ = (next_ + 1) % in_flight_.size();
}

template <typename Real>
void QuantizedReplicaGather<Real>::finish() {
  // In posting order: the buffer after next_ was taken first.
  for (size_t i = 0; i < in_flight_.size(); ++i) {
    InFlight& gather = in_flight_[(next_ + i) % in_flight_.size()];
    if (gather.unit >= 0) complete(gather, false);
  }
}

template <typename Real>
void QuantizedReplicaGather<Real>::complete(InFlight& gather, bool blocking) {
  gather.request.wait(blocking);
  const size_t buffer = static_cast<size_t>(&gather - in_flight_.data());
  unpack_int8_gather(shape_, packed_[buffer].data(), replicas_.size(),
                     partition_.unit(gather.unit).sub_shard, block_, gather.shard);
  gather.unit = -1;
}

template class QuantizedReplicaGather<float>;
#if ZEROMINI_HAVE_BF16
template class QuantizedReplicaGather<bf16>;
#endif

}  // namespace zm
