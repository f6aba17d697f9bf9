// GradientPath::AllReduce (stage 0, plain data parallelism): full gradients accumulate over the
// micro-steps; on the last, buckets of consecutive units are all-reduced as backward completes
// them, overlapped with the rest of backward.
#include <utility>

#include "zero/paths/gradient_path.hpp"

namespace zm {

namespace {

// The gradient buckets as (first element, element count) ranges of the padded gradient buffer, in
// the order backward completes them.
std::vector<std::pair<int64_t, int64_t>> bucket_ranges(const Partition& partition,
                                                       const Deck& deck) {
  // Units complete in backward from the last (final norm) down to 0 (embeddings, whose wte
  // gradient also collects the LM head's). A bucket is a run of consecutive units, closed when it
  // reaches bucket_mb; it is all-reduced when its lowest unit is ready.
  const auto bucket_elements =
      static_cast<int64_t>(deck.zero.bucket_mb * 1024.0 * 1024.0 / reduce_element_bytes(deck));
  std::vector<std::pair<int64_t, int64_t>> ranges;
  int hi = partition.num_units() - 1;
  int64_t filled = 0;
  for (int u = partition.num_units() - 1; u >= 0; --u) {
    filled += partition.unit(u).padded;
    if (filled >= bucket_elements || u == 0) {
      const int64_t begin = partition.unit(u).padded_offset;
      const int64_t end = partition.unit(hi).padded_offset + partition.unit(hi).padded;
      ranges.push_back({begin, end - begin});
      hi = u - 1;
      filled = 0;
    }
  }
  return ranges;
}

template <typename Real>
class AllReduceGradients final : public GradientPathT<Real> {
 public:
  AllReduceGradients(const Partition& partition, const Deck& deck);

  Real* grads(int unit, ZeroEngineT<Real>& engine) override { return engine.grad_at(unit, 0); }
  void unit_ready(int unit, MicroStep step, ZeroEngineT<Real>& engine) override;
  void finish(ZeroEngineT<Real>&) override {
    for (CommRequest& request : in_flight_) request.wait();
    in_flight_.clear();
  }

 private:
  struct Bucket {
    int lo, hi;  // units [lo, hi], contiguous in the padded buffer
  };
  std::vector<Bucket> buckets_;
  std::vector<CommRequest> in_flight_;
  bool overlap_;
};

template <typename Real>
AllReduceGradients<Real>::AllReduceGradients(const Partition& partition, const Deck& deck)
    : overlap_(deck.zero.overlap) {
  for (const auto& range : bucket_ranges(partition, deck)) {
    int lo = 0;
    while (partition.unit(lo).padded_offset != range.first) ++lo;
    int hi = lo;
    while (partition.unit(hi).padded_offset + partition.unit(hi).padded <
           range.first + range.second)
      ++hi;
    buckets_.push_back({lo, hi});
  }
}

template <typename Real>
void AllReduceGradients<Real>::unit_ready(int unit, MicroStep step, ZeroEngineT<Real>& engine) {
  engine.fold_full_gradients(unit);
  if (!step.last) return;  // accumulate locally until the step's last micro-step
  for (const Bucket& bucket : buckets_) {
    if (bucket.lo != unit) continue;
    const UnitPartition& lo = engine.partition().unit(bucket.lo);
    const UnitPartition& hi = engine.partition().unit(bucket.hi);
    const size_t count = static_cast<size_t>(hi.padded_offset + hi.padded - lo.padded_offset);
    in_flight_.push_back(engine.comm().iall_reduce_sum(engine.reduced_grad_at(bucket.lo, 0), count,
                                                       engine.reduce_dtype(),
                                                       {bucket.lo, CommPurpose::GradReduce}));
    if (!overlap_) in_flight_.back().wait(true);  // no overlap: blocking
  }
}

}  // namespace

// Per step: one all-reduce per gradient bucket, after the last micro-step's backward; no buffers
// beyond the full gradients of the model state.
PathDeclaration all_reduce_gradients_declaration(const Partition& partition, const Deck& deck) {
  PathDeclaration out;
  for (const auto& bucket : bucket_ranges(partition, deck))
    out.step_collectives.push_back(
        {CommOp::AllReduce, bucket.second, reduce_element_bytes(deck), partition.ranks()});
  return out;
}

template <typename Real>
std::unique_ptr<GradientPathT<Real>> make_all_reduce_gradients(const Partition& partition,
                                                               const Deck& deck) {
  return std::make_unique<AllReduceGradients<Real>>(partition, deck);
}

template std::unique_ptr<GradientPathT<float>> make_all_reduce_gradients(const Partition&,
                                                                         const Deck&);
#if ZEROMINI_HAVE_BF16
template std::unique_ptr<GradientPathT<bf16>> make_all_reduce_gradients(const Partition&,
                                                                        const Deck&);
#endif

}  // namespace zm
