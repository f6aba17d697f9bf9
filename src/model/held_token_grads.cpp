#include "model/held_token_grads.hpp"

#include "core/error.hpp"
#include "kernels/elementwise.hpp"

namespace zm {

bool holds_token_grads(const StageSpec& stage, int64_t micro_batches) {
  return micro_batches > 1 && !stage.shards_gradients();
}

std::vector<BufferSpec> held_token_grads_buffers(int64_t rows, int64_t C, int element_bytes) {
  return {{"held_token_grads", MemCategory::Gradients, rows * C, element_bytes}};
}

template <typename Real>
HeldTokenGrads<Real>::HeldTokenGrads(int64_t rows, int64_t C, MemoryLedger* ledger) {
  PlannedAllocator alloc(held_token_grads_buffers(rows, C, sizeof(Real)), ledger);
  sums_ = alloc.take<Real>("held_token_grads");  // zeroed
  alloc.finish();
}

template <typename Real>
void HeldTokenGrads<Real>::add_to(kernels::TeamShape shape, void* dwte, DType dtype) {
  const auto n = static_cast<int64_t>(sums_.size());
  if (dtype == dtype_of<Real>())
    kernels::add_into(shape, static_cast<Real*>(dwte), sums_.data(), n);
  else if constexpr (!std::is_same_v<Real, float>)
    kernels::accumulate_gradient<Real>(shape, static_cast<float*>(dwte), sums_.data(), nullptr, n,
                                       /*first=*/false);
  else
    ZM_ASSERT(false, "an fp32 model's gradient in {}", dtype_name(dtype));
  kernels::fill(shape, sums_.data(), n, Real(0));
}

#define ZM_INSTANTIATE(R) template class HeldTokenGrads<R>;
ZM_FOR_EACH_REAL(ZM_INSTANTIATE)
#undef ZM_INSTANTIATE

}  // namespace zm
