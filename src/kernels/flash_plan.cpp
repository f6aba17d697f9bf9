#include "kernels/flash_plan.hpp"

#include <algorithm>

namespace zm::kernels::flash {

TilePlan plan_tiles(int64_t S, int64_t hd, int64_t element_bytes, ScratchElements elements) {
  const int64_t level0 = TeamPolicy::scratch_size_max(0);
  int64_t tile = kHostExecution ? 64 : 32;
  const auto bytes = [&](int64_t t) { return elements(t, hd, S) * element_bytes; };
  if (!kHostExecution)
    while (tile > 16 && bytes(tile) > level0) tile /= 2;
  tile = std::max<int64_t>(1, std::min(tile, S));
  return {tile, bytes(tile) <= level0 ? 0 : 1, bytes(tile)};
}

TeamPolicy tile_policy(TeamShape shape, int64_t league, const TilePlan& plan) {
  TeamPolicy policy = team_policy(shape, league);
  policy.set_scratch_size(plan.level, Kokkos::PerTeam(static_cast<size_t>(plan.bytes)));
  return policy;
}

}  // namespace zm::kernels::flash
