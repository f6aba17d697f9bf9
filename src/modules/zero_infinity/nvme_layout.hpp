// How a rank's swap file holds its state (with_offload/nvme_store.cpp), for the store and for the
// planner (with_offload/nvme_plan.cpp), which price the same bytes: unit after unit, where
// zero.nvme_gradients is set the piece's reduced gradients first, then the fp32 master, Adam m
// and v of the rank's piece and, where zero.offload_params = "nvme" under bf16, the piece's bf16
// parameters (fp32 parameters are their own master), each array rounded up to the O_DIRECT
// alignment. Each step reads the whole file once and writes back all of it but the gradients;
// each micro-step writes the gradients, and each after the first reads them first (its sum adds
// to theirs); with the parameters there, each gather of a unit reads its shard (the parameter
// array, or the master) once more.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/memory.hpp"
#include "core/precision.hpp"
#include "modules/zero_infinity/swap_file.hpp"
#include "zero/partition.hpp"
#include "zero/state_tier.hpp"

namespace zm::nvme {

constexpr int kStateArrays = 3;  // master, Adam m, Adam v

// What a rank's file holds of each unit: 1 / optim_pieces of it, and the parameters or not.
struct FileContents {
  int optim_pieces = 1;
  bool params = false;  // the parameter shard (zero.offload_params = "nvme")
  int param_bytes = 0;  // bytes of a parameter where they are not the master (bf16: 2), else 0
  int grad_bytes =
      0;  // bytes of a reduced gradient where the file holds them (zero.nvme_gradients)
};
inline FileContents file_contents(const StateHomes& homes, const PrecisionPolicy& policy,
                                  int optim_pieces) {
  const bool params = homes.params == MemCategory::Storage;
  return {optim_pieces, params, params && policy.mixed() ? element_bytes(policy.compute) : 0,
          homes.grads == MemCategory::Storage ? element_bytes(policy.reduce) : 0};
}

// One state array of a unit's piece: the padded elements of the piece, as the host AdamW
// addresses them, in bytes rounded up to kAlignment.
inline int64_t state_array_bytes(int64_t padded, int optim_pieces) {
  return aligned_size(padded / optim_pieces * static_cast<int64_t>(sizeof(float)));
}
// The piece's parameter array (none where the master is the parameters).
inline int64_t param_array_bytes(int64_t padded, const FileContents& c) {
  return c.param_bytes > 0 ? aligned_size(padded / c.optim_pieces * c.param_bytes) : 0;
}
// The piece's gradient array (none where the gradients are not in the file).
inline int64_t grad_array_bytes(int64_t padded, const FileContents& c) {
  return c.grad_bytes > 0 ? aligned_size(padded / c.optim_pieces * c.grad_bytes) : 0;
}
// A unit's part of the file: what the optimizer step reads; it writes back all but the gradients.
inline int64_t unit_bytes(int64_t padded, const FileContents& c) {
  return grad_array_bytes(padded, c) + kStateArrays * state_array_bytes(padded, c.optim_pieces) +
         param_array_bytes(padded, c);
}
// What a gather of the unit reads: its parameter array, or the master that is the parameters.
inline int64_t shard_read_bytes(int64_t padded, const FileContents& c) {
  return c.param_bytes > 0 ? param_array_bytes(padded, c)
                           : state_array_bytes(padded, c.optim_pieces);
}

// The host staging of the store: `slots` (zero.nvme_buffers) of the largest unit's part (unit u
// updated, u - 1 written, the units after u read), with the parameters there two buffers of the
// largest shard read for a gather (one gather's, the next one's read ahead), with the gradients
// there two of the largest gradient array (one unit's summed while the unit before is written),
// and room to align them.
inline int64_t staging_bytes(const Partition& partition, const FileContents& c, int slots) {
  int64_t largest = 0, largest_shard = 0, largest_grads = 0;
  for (int u = 0; u < partition.num_units(); ++u) {
    largest = std::max(largest, unit_bytes(partition.unit(u).padded, c));
    largest_shard = std::max(largest_shard, shard_read_bytes(partition.unit(u).padded, c));
    largest_grads = std::max(largest_grads, grad_array_bytes(partition.unit(u).padded, c));
  }
  return slots * largest + (c.params ? 2 * largest_shard : 0) + 2 * largest_grads + kAlignment;
}

// The requests of a transfer of `bytes` in blocks of at most `block_bytes` (0: one request).
inline int64_t requests(int64_t bytes, int64_t block_bytes) {
  return block_bytes > 0 ? (bytes + block_bytes - 1) / block_bytes : 1;
}

// The swap file of a rank.
inline int64_t state_file_bytes(const Partition& partition, const FileContents& c) {
  int64_t bytes = 0;
  for (int u = 0; u < partition.num_units(); ++u) bytes += unit_bytes(partition.unit(u).padded, c);
  return bytes;
}

}  // namespace zm::nvme
