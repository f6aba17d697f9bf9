// ZeRO-Offload's memory tier (zero/state_tier.hpp): host memory (pinned in CUDA builds) for the
// optimizer state, and where they apply the gradient shard and the parameter shard, with the
// engine's three parts for it:
//   - HostAdamW: unit by unit, the reduced gradients of the rank's optimizer piece to the host
//     (one unit ahead, so that the copy overlaps the host's update of the unit before), AdamW on
//     the host, the updated parameters back (unless they live on the host); the unit's update
//     gather follows as without offload;
//   - HostShardHome: each micro-step's reduced gradient shard copied to the host as backward
//     completes the unit, and summed there with the device's element arithmetic
//     (host_sums.hpp);
//   - StagedShard: the parameter shard staged to the device before each gather.
// Every copy is an entry of the tier's copy list (host_copies.hpp: its bytes, when it is made and
// where it is waited), posted on this rank's copy stream (host_transfer.hpp) and priced by the
// planner from the same list.
#pragma once

#include <memory>

#include "modules/offload/offload.hpp"
#include "zero/state_tier.hpp"

namespace zm {

std::shared_ptr<const StateTier> host_tier(const OffloadSettings& settings);

}  // namespace zm
