// Parameter initialisation of the ZeRO engine: every value drawn by its index in the whole model
// (so any stage, rank count and cut into slices holds the same model), into whatever each rank
// holds.
#include "zero/engine.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/elementwise.hpp"
#include "kernels/init.hpp"
#include "model/layout.hpp"

namespace zm {

template <typename Real>
template <typename T>
void ZeroEngineT<Real>::init_held(T* buffer, const Placement& placement, uint64_t seed,
                                  int only_unit) const {
  const ParamLayout& layout = partition_->layout();
  const ModelConfig& c = layout.config();
  const float std_normal = 0.02f;
  // GPT-2 scales the projections that write into the residual stream by 1/sqrt(2 L).
  const float std_residual = 0.02f / std::sqrt(2.0f * static_cast<float>(c.layers));
  // Rows of wte beyond the real vocabulary are padding: zero, and they stay zero (their
  // gradient is zero and decay keeps zero at zero).
  const int64_t wte_real = c.vocab * c.dim;
  const int slices = layout.slices(), slice = slice_rank();
  const int first = std::max(only_unit, 0);
  const int last = only_unit < 0 ? partition_->num_units() : only_unit + 1;
  for (int u = first; u < last; ++u) {
    const auto [begin, end] = held_range(placement, u);
    for (const TensorSegment& seg : partition_->segments(u, begin, end)) {
      const TensorInfo& t = layout.tensors()[static_cast<size_t>(seg.tensor)];
      T* segment = only_unit < 0 ? base_of(buffer, piece(placement), u, seg.unit_offset)
                                 : buffer + (seg.unit_offset - begin);
      // Each value is drawn by its index in the whole model, so a slice holds the same numbers as
      // the same elements of a whole model.
      const uint64_t tensor_index = static_cast<uint64_t>(
          layout.unit(u).global_offset - layout.unit(u).dataset_offset + t.global_offset);
      for (const SliceRun& run :
           slice_runs(t, slices, slice, seg.tensor_offset, seg.tensor_offset + seg.length)) {
        T* dst = segment + (run.local - seg.tensor_offset);
        switch (t.init) {
          case InitKind::Ones:
            kernels::fill(team_shape_, dst, run.length, T(1));
            break;
          case InitKind::Zeros:
            kernels::fill(team_shape_, dst, run.length, T(0));
            break;
          case InitKind::Normal:
          case InitKind::NormalResidual: {
            const float stddev = t.init == InitKind::Normal ? std_normal : std_residual;
            int64_t normal_length = run.length;
            if (t.name == "wte.weight")
              normal_length = std::max<int64_t>(0, std::min(run.length, wte_real - run.global));
            kernels::init_normal(team_shape_, dst, normal_length, stddev, seed,
                                 tensor_index + static_cast<uint64_t>(run.global));
            kernels::fill(team_shape_, dst + normal_length, run.length - normal_length, T(0));
            break;
          }
        }
      }
    }
  }
}

template <typename Real>
void ZeroEngineT<Real>::init_parameters(uint64_t seed) {
  // The compute parameters and the master copy are drawn from the same fp32 values, so the bf16
  // parameters are the rounding of their master.
  const bool params_stored = params_.category() == MemCategory::Storage;
  if (!params_stored) init_held(params_.data(), params_storage_, seed);
  if (!has_master() && !params_stored) return;
  if (master_.data()) return init_held(master_.data(), optim_storage_, seed);
  // The master (or fp32 parameters, their own master) in MemCategory::Storage: drawn unit by unit,
  // handed to the optimizer, which rounds the compute parameters it keeps there.
  for (int u = 0; u < partition_->num_units(); ++u) {
    const auto [begin, end] = held_range(master_storage(), u);
    if (end <= begin) continue;
    Kokkos::View<float*, MemSpace> drawn("initial master", end - begin);
    init_held(drawn.data(), master_storage(), seed, u);
    auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), drawn);
    optimizer_->copy_state(0, u, begin, end - begin, host.data(), false, *this);
  }
}

#define ZM_INSTANTIATE(R) template void ZeroEngineT<R>::init_parameters(uint64_t);
ZM_FOR_EACH_REAL(ZM_INSTANTIATE)
#undef ZM_INSTANTIATE

}  // namespace zm
