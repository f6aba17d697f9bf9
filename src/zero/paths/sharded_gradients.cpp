// GradientPath::ReduceScatterAsComplete (stages 2 and 3, P_os+g): only this rank's shard of the
// gradients is kept. Each unit's gradients accumulate in a full-size bucket during its backward,
// then are reduce-scattered into the shard (the schedule's GroupReduction, then under hybrid
// sharding its ReplicaReduction), and the bucket is reused. The embedding unit has its own bucket
// (its wte gradient starts in the LM head, at the start of backward, and ends in the embedding
// backward, at the end); the other units rotate through one bucket, or two when overlap is on (one
// being reduced while the next fills).
// Later micro-steps receive into shard-sized buffers beside the buckets; an fp32 reduction of
// bf16 gradients reduces fp32 copies of the buckets. How a received sum joins the shard is decided
// once (ShardSum, zero/state_tier.hpp) and done by the engine's shard home (the core's: on the
// device; a tier's: in the memory the shard lives in).
#include <algorithm>
#include <map>
#include <type_traits>

#include "core/error.hpp"
#include "kernels/elementwise.hpp"
#include "zero/paths/gradient_path.hpp"
#include "zero/schedule_execution.hpp"
#include "zero/unit_buffer_set.hpp"

namespace zm {

namespace {

UnitBufferSet gradient_bucket_set(const Partition& partition, const ZeroOptions& options) {
  UnitBufferSet buckets;
  buckets.prefix = "grad_bucket";
  buckets.embed_elements = partition.unit(0).padded;
  buckets.shared_elements = partition.max_padded_unit(1, partition.num_units() - 1);
  buckets.shared = options.overlap ? 2 : 1;  // one being reduced while the next fills
  buckets.element_bytes = element_bytes(options.policy.compute);
  return buckets;
}

UnitBufferSet gradient_wide_bucket_set(const Partition& partition, const ZeroOptions& options) {
  UnitBufferSet wide = gradient_bucket_set(partition, options);
  wide.prefix = "grad_bucket_fp32";
  wide.element_bytes = element_bytes(options.policy.reduce);
  return wide;
}

UnitBufferSet gradient_receive_set(const Partition& partition, const ZeroOptions& options) {
  UnitBufferSet receive = gradient_bucket_set(partition, options);
  receive.prefix = "grad_recv";
  receive.element_bytes = element_bytes(options.policy.reduce);
  receive.embed_elements = partition.unit(0).shard;
  receive.shared_elements = 0;
  for (int u = 1; u < partition.num_units(); ++u)
    receive.shared_elements = std::max(receive.shared_elements, partition.unit(u).shard);
  return receive;
}

template <typename Real>
class ShardedGradients final : public GradientPathT<Real> {
 public:
  // Allocates the buffers of sharded_gradient_buffers.
  ShardedGradients(const Partition& partition, const ZeroOptions& options, MemoryLedger* ledger) {
    PlannedAllocator alloc(sharded_gradient_buffers(partition, options), ledger);
    const bool accumulates = options.grad_accum > 1;
    beside_always_ = !on_device(options.homes.grads);
    shard_sum_ = shard_sum(options);
    buckets_ = gradient_bucket_set(partition, options).take<Real>(alloc);
    if (shard_sum_ == ShardSum::Widened)
      wide_ = gradient_wide_bucket_set(partition, options).take<float>(alloc);
    if ((accumulates || beside_always_) && shard_sum_ == ShardSum::Widened)
      recv_wide_ = gradient_receive_set(partition, options).take<float>(alloc);
    else if (accumulates || beside_always_)
      recv_ = gradient_receive_set(partition, options).take<Real>(alloc);
    alloc.finish();
  }

  Real* grads(int unit, ZeroEngineT<Real>& engine) override { return bucket_for(unit, engine); }
  void unit_ready(int unit, MicroStep step, ZeroEngineT<Real>& engine) override {
    auto found = bucket_of_unit_.find(unit);
    ZM_ASSERT(found != bucket_of_unit_.end(), "unit {} reported ready without gradients", unit);
    const auto bucket = static_cast<size_t>(found->second);
    bucket_of_unit_.erase(found);
    const UnitPartition& p = engine.partition().unit(unit);
    const int64_t first = engine.comm().rank() * p.shard;
    InFlight op{{}, unit, static_cast<int>(bucket), nullptr, step.first, step.last};
    // A receive buffer's previous sum may still be on its way to the shard's home.
    engine.shard_home().before_receive(engine);
    // Later micro-steps receive beside the shard and add to what it holds (with the shard in
    // another memory, every micro-step receives beside it and goes there when complete).
    const bool beside = !step.first || beside_always_;
    void* send = buckets_[bucket].data();
    void* recv = nullptr;
    if (shard_sum_ == ShardSum::Widened) {
      // Only bf16 gradients are widened (under fp32 the reduction already is fp32).
      if constexpr (!std::is_same_v<Real, float>)
        kernels::convert<Real, float>(engine.team_shape(), wide_[bucket].data(),
                                      buckets_[bucket].data(), p.padded);
      send = wide_[bucket].data();
      recv =
          beside ? static_cast<void*>(recv_wide_[bucket].data()) : engine.grad_sum_at(unit, first);
    } else {
      recv = beside ? static_cast<void*>(recv_[bucket].data()) : engine.grad_at(unit, first);
    }
    if (beside) op.beside = recv;
    engine.before_reduction(unit, send, p.padded, engine.reduce_dtype());
    const ScheduledCollective& reduction = engine.schedule().of(unit, ScheduleRole::GroupReduction);
    op.request = post_scheduled(reduction, engine, {send, recv});
    in_flight_.push_back(std::move(op));
    // Where the schedule waits at once (no overlap); else when the bucket is reused.
    if (reduction.blocking()) complete(in_flight_.back(), engine);
  }
  void finish(ZeroEngineT<Real>& engine) override {
    for (InFlight& op : in_flight_)
      if (op.bucket >= 0) complete(op, engine);
    in_flight_.clear();
    engine.finish_replica_reductions();
    engine.shard_home().finish(engine);  // the gradient shard is whole in its home
    bucket_of_unit_.clear();
    next_block_bucket_ = 0;
  }

 private:
  struct InFlight {
    CommRequest request;
    int unit = -1;
    int bucket = -1;
    void* beside = nullptr;    // where the sum was received beside the shard, if it was
    bool first_micro = false;  // the first micro-step's sum starts the shard's
    bool last_micro = false;   // the shard is then complete in the group
  };
  Real* bucket_for(int unit, ZeroEngineT<Real>& engine) {
    auto found = bucket_of_unit_.find(unit);
    if (found != bucket_of_unit_.end()) return buckets_[static_cast<size_t>(found->second)].data();
    int bucket = 0;
    if (unit != 0) {
      bucket = 1 + next_block_bucket_;
      next_block_bucket_ = (next_block_bucket_ + 1) % static_cast<int>(buckets_.size() - 1);
    }
    wait_bucket(bucket, engine);  // its previous reduce-scatter must be done before reuse
    Real* data = buckets_[static_cast<size_t>(bucket)].data();
    kernels::fill(engine.team_shape(), data, engine.partition().unit(unit).padded, Real(0));
    bucket_of_unit_[unit] = bucket;
    return data;
  }
  void complete(InFlight& op, ZeroEngineT<Real>& engine) {
    op.request.wait();
    const UnitPartition& p = engine.partition().unit(op.unit);
    const int64_t first = engine.comm().rank() * p.shard;
    Real* shard = engine.grad_at(op.unit, first);
    float* sum = shard_sum_ == ShardSum::Widened || shard_sum_ == ShardSum::SumInFp32
                     ? engine.grad_sum_at(op.unit, first)
                     : nullptr;
    // What the sum joins (the fp32 sum under the fp32 reduction), and where the reduction left it:
    // beside it, or in it.
    void* joined = shard_sum_ == ShardSum::Widened ? static_cast<void*>(sum) : shard;
    void* received = op.beside ? op.beside : joined;
    ShardHomeT<Real>& home = engine.shard_home();
    if (shard_sum_ == ShardSum::SumInFp32)
      home.accumulate(op.unit, sum, static_cast<const Real*>(received),
                      op.last_micro ? shard : nullptr, p.shard, op.first_micro, engine);
    else if (op.first_micro || shard_sum_ == ShardSum::InPlace)
      home.place(op.unit, joined, received, p.shard, engine);
    else
      home.add(op.unit, joined, received, p.shard, engine);
    op.bucket = -1;
    // Across the groups, once the shard holds its group's sum (nothing with one group).
    if (op.last_micro) engine.post_replica_reduction(op.unit);
  }
  void wait_bucket(int bucket, ZeroEngineT<Real>& engine) {
    for (InFlight& op : in_flight_)
      if (op.bucket == bucket) complete(op, engine);
  }

  std::vector<TrackedBuffer<Real>> buckets_;     // [0] embedding unit, [1..] the rest
  std::vector<TrackedBuffer<Real>> recv_;        // per bucket, for grad_accum > 1
  std::vector<TrackedBuffer<float>> wide_;       // fp32 reduction: the buckets' fp32 copies
  std::vector<TrackedBuffer<float>> recv_wide_;  // fp32 reduction: recv_ in fp32
  bool beside_always_ = false;  // the shard lives in another memory: every sum received beside it
  ShardSum shard_sum_ = ShardSum::InPlace;
  std::map<int, int> bucket_of_unit_;
  int next_block_bucket_ = 0;
  std::vector<InFlight> in_flight_;
};

// The core's home of the shard: device memory, where the reduction left the first sum in place.
template <typename Real>
class DeviceShardHome final : public ShardHomeT<Real> {
 public:
  void place(int unit, void* dst, const void* received, int64_t, ZeroEngineT<Real>&) override {
    ZM_ASSERT(dst == received, "unit {}: a first sum received beside a shard on the device", unit);
  }
  void add(int, void* dst, const void* received, int64_t n, ZeroEngineT<Real>& engine) override {
    if (engine.reduce_dtype() == DType::F32)
      kernels::add_into(engine.team_shape(), static_cast<float*>(dst),
                        static_cast<const float*>(received), n);
    else
      kernels::add_into(engine.team_shape(), static_cast<Real*>(dst),
                        static_cast<const Real*>(received), n);
  }
  void accumulate(int, float* sum, const Real* received, Real* rounded, int64_t n, bool first,
                  ZeroEngineT<Real>& engine) override {
    kernels::accumulate_gradient(engine.team_shape(), sum, received, rounded, n, first);
  }
};

}  // namespace

// The buckets and the receive buffers, in allocation order.
std::vector<BufferSpec> sharded_gradient_buffers(const Partition& partition,
                                                 const ZeroOptions& options) {
  std::vector<BufferSpec> buffers;
  gradient_bucket_set(partition, options).add_to(buffers);
  if (options.policy.widens_reduce()) gradient_wide_bucket_set(partition, options).add_to(buffers);
  // Under gradient accumulation, later micro-steps receive beside the shard and add into it; with
  // the shard in another memory every micro-step receives beside it.
  if (options.grad_accum > 1 || !on_device(options.homes.grads))
    gradient_receive_set(partition, options).add_to(buffers);
  return buffers;
}

ShardSum shard_sum(const ZeroOptions& options) {
  if (options.policy.widens_reduce()) return ShardSum::Widened;
  if (sums_gradients_in_fp32(options)) return ShardSum::SumInFp32;
  if (options.grad_accum > 1) return ShardSum::Add;
  return ShardSum::InPlace;
}

template <typename Real>
std::unique_ptr<ShardHomeT<Real>> device_shard_home() {
  return std::make_unique<DeviceShardHome<Real>>();
}

template <typename Real>
std::unique_ptr<GradientPathT<Real>> make_sharded_gradients(const Partition& partition,
                                                            const ZeroOptions& options,
                                                            MemoryLedger* ledger) {
  return std::make_unique<ShardedGradients<Real>>(partition, options, ledger);
}

#define ZM_INSTANTIATE(R)                                            \
  template std::unique_ptr<ShardHomeT<R>> device_shard_home();       \
  template std::unique_ptr<GradientPathT<R>> make_sharded_gradients( \
      const Partition&, const ZeroOptions&, MemoryLedger*);
ZM_FOR_EACH_REAL(ZM_INSTANTIATE)
#undef ZM_INSTANTIATE

}  // namespace zm
