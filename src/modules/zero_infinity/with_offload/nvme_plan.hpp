// The NVMe tier in `zeromini plan`: the swap files' bytes and each step's reads and writes, from
// the layout the store writes (nvme_layout.hpp), and with a machine's [nvme] table their seconds
// and whether the node's drives hold its ranks' files.
#pragma once

#include <cstdint>

#include "core/deck.hpp"
#include "core/zero_mesh.hpp"

namespace zm {

// One rank's NVMe traffic per step with zero.offload_optimizer = "nvme" (all zero where the state
// is not there at `stage`).
struct NvmeVolume {
  int64_t file_bytes = 0;         // the rank's swap file
  int64_t read_bytes = 0;         // read per step: the whole file, unit by unit, and the shards
  int64_t write_bytes = 0;        // written back per step (and backward's gradients)
  int64_t grad_write_bytes = 0;   // zero.nvme_gradients: backward's, each micro-step's
  int64_t grad_read_bytes = 0;    // and each after the first reading them to add to them
  int64_t reads = 0, writes = 0;  // requests per step: per unit each way, and the shards'
  int64_t shard_read_bytes = 0;   // zero.offload_params = "nvme": each gather's shard, read
  int64_t shard_reads = 0;        // (one per gather of a unit)
  int64_t shard_gathers = 0;      // the gathers that read them
  int64_t first_unit_bytes = 0;   // unit 0's state (its read is waited before any update)
  int64_t last_unit_bytes = 0;    // the last unit's (its write is waited at the next step)
  int64_t staging_bytes = 0;      // host memory: the store's slots (nvme_layout.hpp)
};
NvmeVolume planned_nvme(const Deck& deck, int stage, const ZeroMesh& mesh);

// Adds the planner's pricing, columns and notes (at start-up).
void register_nvme_plan();

}  // namespace zm
