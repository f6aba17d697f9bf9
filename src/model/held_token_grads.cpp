#include "model/held_token_grads.hpp"

#include "core/error.hpp"
#include "kernels/encoder.hpp"

namespace zm {

bool holds_token_grads(const StageSpec& stage, int64_t micro_batches) {
  return micro_batches > 1 && !stage.shards_gradients();
}

std::vector<BufferSpec> held_token_grads_buffers(int64_t micro_batches, int64_t rows, int64_t C) {
  return {{"held_token_sums", MemCategory::Gradients, micro_batches * rows * C, 4},
          {"held_token_ids", MemCategory::Gradients, micro_batches * rows, 4}};
}

template <typename Real>
HeldTokenGrads<Real>::HeldTokenGrads(int64_t micro_batches, int64_t rows, int64_t C,
                                     MemoryLedger* ledger)
    : rows_(rows), C_(C) {
  static_assert(sizeof(kernels::Acc<Real>) == 4, "held_token_grads_buffers");
  PlannedAllocator alloc(held_token_grads_buffers(micro_batches, rows, C), ledger);
  sums_ = alloc.take<kernels::Acc<Real>>("held_token_sums");
  ids_ = alloc.take<int>("held_token_ids");
  alloc.finish();
}

template <typename Real>
void HeldTokenGrads<Real>::hold(kernels::TeamShape shape, const kernels::TokenGroups& groups,
                                const Real* dout) {
  const auto held = static_cast<int64_t>(counts_.size());
  ZM_ASSERT(static_cast<size_t>((held + 1) * rows_) <= ids_.size(),
            "more micro-batches than the step has");
  const int64_t first = held * rows_;
  kernels::token_sums(shape, sums_.data() + first * C_, dout, groups, C_);
  using Ids = Kokkos::View<const int*, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  Kokkos::deep_copy(Kokkos::subview(ids_.view(), std::make_pair(first, first + groups.count)),
                    Ids(groups.ids, static_cast<size_t>(groups.count)));
  counts_.push_back(groups.count);
}

template <typename Real>
void HeldTokenGrads<Real>::add_to(kernels::TeamShape shape, void* dwte, DType dtype) {
  for (size_t m = 0; m < counts_.size(); ++m) {
    const int64_t first = static_cast<int64_t>(m) * rows_;
    const int* ids = ids_.data() + first;
    const kernels::Acc<Real>* sums = sums_.data() + first * C_;
    if (dtype == DType::F32)
      kernels::add_token_sums(shape, static_cast<float*>(dwte), ids, sums, counts_[m], C_);
    else if constexpr (!std::is_same_v<Real, float>)
      kernels::add_token_sums(shape, static_cast<Real*>(dwte), ids, sums, counts_[m], C_);
    else
      ZM_ASSERT(false, "an fp32 model's gradient in {}", dtype_name(dtype));
  }
  counts_.clear();
}

#define ZM_INSTANTIATE(R) template class HeldTokenGrads<R>;
ZM_FOR_EACH_REAL(ZM_INSTANTIATE)
#undef ZM_INSTANTIATE

}  // namespace zm
