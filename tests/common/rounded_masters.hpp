// Mixed precision (train.precision = "bf16"): whether the bf16 compute parameters a rank holds are
// the rounding of their fp32 masters, as every stage and shard layout must leave them after a
// step (test_mixed_precision, test_hybrid_sharding).
#pragma once

#include "common/gathered_state.hpp"
#include "core/compat.hpp"  // ZEROMINI_HAVE_BF16

#if ZEROMINI_HAVE_BF16

#include <cstdint>
#include <vector>

#include "train/trainer_typed.hpp"
#include "zero/engine.hpp"

namespace zm::testing {

struct MasterComparison {
  int64_t compared = 0, differing = 0;
};

// Every parameter this rank holds against the rounding of its master (collective: the masters
// are gathered).
inline MasterComparison compare_with_rounded_masters(TrainerT<bf16>& trainer) {
  const std::vector<float> masters = zm::testing::gathered_parameters(trainer.engine());
  const ZeroEngineT<bf16>& engine = trainer.typed_engine();
  const ParamLayout& layout = trainer.layout();
  MasterComparison result;
  for (int u = 0; u < layout.num_units(); ++u) {
    const auto [begin, end] = engine.held_range(engine.param_storage(), u);
    if (end <= begin) continue;
    const auto count = static_cast<size_t>(end - begin);
    using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
    Kokkos::View<const bf16*, MemSpace, Unmanaged> device(engine.param_at(u, begin), count);
    auto host = Kokkos::create_mirror_view_and_copy(HostSpace(), device);
    for (size_t i = 0; i < count; ++i, ++result.compared) {
      const float master = masters[static_cast<size_t>(layout.unit(u).offset + begin) + i];
      if (static_cast<float>(host(i)) != static_cast<float>(static_cast<bf16>(master)))
        ++result.differing;
    }
  }
  return result;
}

}  // namespace zm::testing

#endif
