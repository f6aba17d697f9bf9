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

// Tiles of 64 rows on the host (a tile's scratch stays in a core's L2 cache), of at most 32 on a
// GPU, halved (down to 16) until the scratch fits a team's shared memory; never longer than S.
TilePlan plan_tiles(int64_t S, int64_t hd, int64_t element_bytes, ScratchElements elements);

// A team of `shape` per item of `league`, each with the scratch of `plan`.
TeamPolicy tile_policy(TeamShape shape, int64_t league, const TilePlan& plan);

// The start of a team's scratch under `plan`.
template <typename A>
KOKKOS_INLINE_FUNCTION A* team_scratch(const TeamMember& team, const TilePlan& plan) {
  return static_cast<A*>(team.team_scratch(plan.level).get_shmem(static_cast<size_t>(plan.bytes)));
}

}  // namespace zm::kernels::flash
