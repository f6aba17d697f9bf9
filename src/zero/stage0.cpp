// Stage 0: plain data parallelism. Everything replicated; gradients all-reduced in buckets of
// consecutive units as backward completes them, overlapped with the rest of backward.
#include "zero/stages.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace zm {

namespace {
constexpr StorageKinds kStage0Storage{Storage::Full, Storage::Full, Storage::Full};
}  // namespace

std::vector<BufferSpec> stage0_buffers(const PartitionPlan& plan, const Deck& deck,
                                       const ZeroMesh& mesh) {
  return model_state_buffers(plan, deck, kStage0Storage, mesh);
}

std::vector<std::pair<int64_t, int64_t>> stage0_bucket_ranges(const PartitionPlan& plan,
                                                              const Deck& deck) {
  // Units complete in backward from the last (final norm) down to 0 (embeddings, whose wte
  // gradient also collects the LM head's). A bucket is a run of consecutive units, closed when it
  // reaches bucket_mb; it is all-reduced when its lowest unit is ready.
  const auto bucket_elements =
      static_cast<int64_t>(deck.zero.bucket_mb * 1024.0 * 1024.0 / reduce_element_bytes(deck));
  std::vector<std::pair<int64_t, int64_t>> ranges;
  int hi = plan.num_units() - 1;
  int64_t filled = 0;
  for (int u = plan.num_units() - 1; u >= 0; --u) {
    filled += plan.unit(u).padded;
    if (filled >= bucket_elements || u == 0) {
      const int64_t begin = plan.unit(u).padded_offset;
      const int64_t end = plan.unit(hi).padded_offset + plan.unit(hi).padded;
      ranges.push_back({begin, end - begin});
      hi = u - 1;
      filled = 0;
    }
  }
  return ranges;
}

// Per step: one all-reduce per gradient bucket, after the last micro-step's backward.
PlannedCollectives stage0_traffic(const PartitionPlan& plan, const Deck& deck) {
  PlannedCollectives out;
  for (const auto& bucket : stage0_bucket_ranges(plan, deck))
    out.push_back({CommOp::AllReduce, bucket.second, reduce_element_bytes(deck), plan.ranks()});
  return out;
}

template <typename Real>
Stage0<Real>::Stage0(const PartitionPlan& plan, MeshComms& comms, const Deck& deck,
                     MemoryLedger* ledger)
    : ZeroEngineT<Real>(0, plan, comms, deck, kStage0Storage, ledger) {
  for (const auto& range : stage0_bucket_ranges(plan, deck)) {
    int lo = 0;
    while (plan.unit(lo).padded_offset != range.first) ++lo;
    int hi = lo;
    while (plan.unit(hi).padded_offset + plan.unit(hi).padded < range.first + range.second) ++hi;
    buckets_.push_back({lo, hi});
  }
}

template <typename Real>
void Stage0<Real>::grads_ready(int unit) {
  this->fold_full_gradients(unit);
  if (!this->last_micro()) return;  // accumulate locally until the step's last micro-step
  for (const Bucket& bucket : buckets_) {
    if (bucket.lo != unit) continue;
    const UnitPartition& lo = this->plan_->unit(bucket.lo);
    const UnitPartition& hi = this->plan_->unit(bucket.hi);
    const size_t count = static_cast<size_t>(hi.padded_offset + hi.padded - lo.padded_offset);
    in_flight_.push_back(this->comm_->iall_reduce_sum(this->reduced_grad_at(bucket.lo, 0), count,
                                                      this->reduce_dtype(),
                                                      {bucket.lo, CommPurpose::GradReduce}));
    if (!this->deck_->zero.overlap) in_flight_.back().wait(true);  // no overlap: blocking
  }
}

template class Stage0<float>;
#if ZEROMINI_HAVE_BF16
template class Stage0<bf16>;
#endif

}  // namespace zm
