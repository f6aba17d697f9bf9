#include <fmt/format.h>

#include "core/error.hpp"
#include "kernels/elementwise.hpp"
#include "zero/stages.hpp"

namespace zm {

namespace {
int block_buckets(const Deck& deck) {
  return deck.zero.overlap ? 2 : 1;
}
}  // namespace

template <typename Real>
void ShardedGradients<Real>::add_to_plan(std::vector<BufferSpec>& plan,
                                         const PartitionPlan& partition, const Deck& deck) {
  const int last = partition.num_units() - 1;
  const int64_t block = partition.max_padded_unit(1, last);
  plan.push_back({"grad_bucket.embed", MemCategory::CommBuffers, partition.unit(0).padded,
                  compute_element_bytes(deck)});
  for (int i = 0; i < block_buckets(deck); ++i)
    plan.push_back({fmt::format("grad_bucket.{}", i), MemCategory::CommBuffers, block,
                    compute_element_bytes(deck)});
  if (deck.train.grad_accum > 1) {
    int64_t block_shard = 0;
    for (int u = 1; u <= last; ++u) block_shard = std::max(block_shard, partition.unit(u).shard);
    plan.push_back({"grad_recv.embed", MemCategory::CommBuffers, partition.unit(0).shard,
                    compute_element_bytes(deck)});
    for (int i = 0; i < block_buckets(deck); ++i)
      plan.push_back({fmt::format("grad_recv.{}", i), MemCategory::CommBuffers, block_shard,
                      compute_element_bytes(deck)});
  }
}

template <typename Real>
void ShardedGradients<Real>::allocate(const PartitionPlan& partition, const Deck& deck) {
  std::vector<BufferSpec> plan;
  add_to_plan(plan, partition, deck);
  PlannedAllocator alloc(plan);
  accumulate_ = deck.train.grad_accum > 1;
  buckets_.push_back(alloc.take<Real>("grad_bucket.embed"));
  for (int i = 0; i < block_buckets(deck); ++i)
    buckets_.push_back(alloc.take<Real>(fmt::format("grad_bucket.{}", i)));
  if (accumulate_) {
    recv_.push_back(alloc.take<Real>("grad_recv.embed"));
    for (int i = 0; i < block_buckets(deck); ++i)
      recv_.push_back(alloc.take<Real>(fmt::format("grad_recv.{}", i)));
  }
  alloc.finish();
}

template <typename Real>
void ShardedGradients<Real>::complete(InFlight& op, ZeroEngineT<Real>& engine) {
  op.request.wait();
  if (op.accumulate_from) {
    const UnitPartition& p = engine.plan().unit(op.unit);
    kernels::add_into(engine.grad_at(op.unit, engine.comm().rank() * p.shard), op.accumulate_from,
                      p.shard);
  }
  op.bucket = -1;
}

template <typename Real>
void ShardedGradients<Real>::wait_bucket(int bucket, ZeroEngineT<Real>& engine) {
  for (InFlight& op : in_flight_)
    if (op.bucket == bucket) complete(op, engine);
}

template <typename Real>
Real* ShardedGradients<Real>::bucket_for(int unit, ZeroEngineT<Real>& engine) {
  auto found = bucket_of_unit_.find(unit);
  if (found != bucket_of_unit_.end()) return buckets_[static_cast<size_t>(found->second)].data();
  int bucket = 0;
  if (unit != 0) {
    bucket = 1 + next_block_bucket_;
    next_block_bucket_ = (next_block_bucket_ + 1) % static_cast<int>(buckets_.size() - 1);
  }
  wait_bucket(bucket, engine);  // its previous reduce-scatter must be done before reuse
  Real* data = buckets_[static_cast<size_t>(bucket)].data();
  kernels::fill(data, engine.plan().unit(unit).padded, Real(0));
  bucket_of_unit_[unit] = bucket;
  return data;
}

template <typename Real>
void ShardedGradients<Real>::unit_ready(int unit, ZeroEngineT<Real>& engine, bool first_micro_step,
                                        bool overlap) {
  auto found = bucket_of_unit_.find(unit);
  ZM_ASSERT(found != bucket_of_unit_.end(), "unit {} reported ready without gradients", unit);
  const int bucket = found->second;
  bucket_of_unit_.erase(found);
  const UnitPartition& p = engine.plan().unit(unit);
  InFlight op;
  op.unit = unit;
  op.bucket = bucket;
  Real* shard = engine.grad_at(unit, engine.comm().rank() * p.shard);
  Real* recv = shard;
  if (accumulate_ && !first_micro_step) {
    // Later micro-steps add to what the shard already holds.
    recv = recv_[static_cast<size_t>(bucket)].data();
    op.accumulate_from = recv;
  }
  op.request = engine.comm().ireduce_scatter_sum(buckets_[static_cast<size_t>(bucket)].data(), recv,
                                                 static_cast<size_t>(p.shard), dtype_of<Real>());
  in_flight_.push_back(std::move(op));
  if (!overlap) complete(in_flight_.back(), engine);
}

template <typename Real>
void ShardedGradients<Real>::finish(ZeroEngineT<Real>& engine) {
  for (InFlight& op : in_flight_)
    if (op.bucket >= 0) complete(op, engine);
  in_flight_.clear();
  bucket_of_unit_.clear();
  next_block_bucket_ = 0;
}

template class ShardedGradients<float>;
#if ZEROMINI_HAVE_BF16
template class ShardedGradients<bf16>;
#endif

}  // namespace zm
