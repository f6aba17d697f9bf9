// The tile size and team scratch of the fused attention kernels (flash_attention_*.cpp).
#pragma once

#include <cstdint>

#include "kernels/team.hpp"

namespace zm::kernels::flash {

// Square tiles of `tile` query and key rows; the scratch each team takes, in bytes, and from which
// level: 0 (a GPU's shared memory, a host thread's own buffer) when it fits there, else 1.
struct TilePlan {
  int64_t tile;
  int level;
  int64_t bytes;
};

// Elements of the arithmetic type one team's scratch holds at a tile size, head size and sequence
// length.
using ScratchElements = int64_t (*)(int64_t tile, int64_t hd, int64_t S);

// What a plan may take: the level 0 scratch the device gives one team, in bytes, and the tile
// sizes the backend's kernels are made for: max_tile rows, halved down to min_tile while the
// scratch does not fit level 0 (then level 1 holds it).
struct TileLimits {
  int64_t level0_bytes;
  int64_t max_tile, min_tile;
};

// This device's limits, read at run time. Level 0 is what Kokkos reports its teams may take
// (the team policy's scratch_size_max(0)): on CUDA the block's shared memory less what Kokkos'
// team reductions reserve, 48 KiB before that by default; Kokkos releases that opt a kernel in to
// the larger carve-out (kokkos#9012; up to 227 KiB per block on sm_90) report that instead, and
// then the backward's 32-row tiles fit where 48 KiB held only 16 rows. Tiles: 64 rows on the
// host, one size whatever level 0 says (a tile's scratch stays in a core's L2 cache, and level 1
// is host memory as fast as level 0); 32 rows on a GPU, 16 where 32 do not fit level 0 (larger
// tiles would leave fewer teams per SM and fewer teams on short sequences). `max_tile` > 0 caps
// the tiles (what tests force: the result must not depend on them beyond rounding).
TileLimits device_tile_limits(int64_t max_tile = 0);

// The largest tile the limits allow whose scratch fits level 0, never longer than S.
TilePlan plan_tiles(int64_t S, int64_t hd, int64_t element_bytes, ScratchElements elements,
                    const TileLimits& limits);

// A team of `shape` per item of `league`, each with the scratch of `plan`.
TeamPolicy tile_policy(TeamShape shape, int64_t league, const TilePlan& plan);

// The start of a team's scratch under `plan`.
template <typename A>
KOKKOS_INLINE_FUNCTION A* team_scratch(const TeamMember& team, const TilePlan& plan) {
  return static_cast<A*>(team.team_scratch(plan.level).get_shmem(static_cast<size_t>(plan.bytes)));
}

}  // namespace zm::kernels::flash
