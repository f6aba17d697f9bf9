#include "modules/fused_attention/flash_plan.hpp"

#include <algorithm>

namespace zm::kernels::flash {

TileLimits device_tile_limits(int64_t max_tile) {
  // Asked of a policy rather than of its type: Kokkos may make the limit depend on the policy.
  const int64_t level0 = team_policy(kDefaultTeamShape, 1).scratch_size_max(0);
  TileLimits limits = kHostExecution ? TileLimits{level0, 64, 64} : TileLimits{level0, 32, 16};
  if (max_tile > 0) {
    limits.max_tile = std::min(limits.max_tile, max_tile);
    limits.min_tile = std::min(limits.min_tile, limits.max_tile);
  }
  return limits;
}

TilePlan plan_tiles(int64_t S, int64_t hd, int64_t element_bytes, ScratchElements elements,
                    const TileLimits& limits) {
  const auto bytes = [&](int64_t t) { return elements(t, hd, S) * element_bytes; };
  int64_t tile = limits.max_tile;
  while (tile / 2 >= limits.min_tile && bytes(tile) > limits.level0_bytes) tile /= 2;
  tile = std::max<int64_t>(1, std::min(tile, S));
  return {tile, bytes(tile) <= limits.level0_bytes ? 0 : 1, bytes(tile)};
}

TeamPolicy tile_policy(TeamShape shape, int64_t league, const TilePlan& plan) {
  TeamPolicy policy = team_policy(shape, league);
  policy.set_scratch_size(plan.level, Kokkos::PerTeam(static_cast<size_t>(plan.bytes)));
  return policy;
}

}  // namespace zm::kernels::flash
