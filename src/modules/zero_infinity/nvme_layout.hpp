// How a rank's swap file holds its optimizer state (with_offload/nvme_store.cpp), for the store
// and for the planner (with_offload/nvme_plan.cpp), which price the same bytes: unit after unit,
// the fp32 master, Adam m and v of the rank's piece, each array rounded up to the O_DIRECT
// alignment. Each step reads the whole file once and writes it back once.
#pragma once

#include <algorithm>
#include <cstdint>

#include "modules/zero_infinity/swap_file.hpp"
#include "zero/partition.hpp"

namespace zm::nvme {

constexpr int kStateArrays = 3;  // master, Adam m, Adam v

// One state array of a unit's piece: the padded elements of the piece, as the host AdamW
// addresses them, in bytes rounded up to kAlignment.
inline int64_t state_array_bytes(int64_t padded, int optim_pieces) {
  return aligned_size(padded / optim_pieces * static_cast<int64_t>(sizeof(float)));
}

// The host staging of the store: kSlots slots of the largest unit's state (unit u + 1 read, u
// updated, u - 1 written), and room to align them.
constexpr int kSlots = 3;
inline int64_t staging_bytes(const Partition& partition, int optim_pieces) {
  int64_t largest = 0;
  for (int u = 0; u < partition.num_units(); ++u)
    largest = std::max(largest, state_array_bytes(partition.unit(u).padded, optim_pieces));
  return kSlots * kStateArrays * largest + kAlignment;
}

// The swap file of a rank whose optimizer piece is 1 / optim_pieces of each unit.
inline int64_t state_file_bytes(const Partition& partition, int optim_pieces) {
  int64_t bytes = 0;
  for (int u = 0; u < partition.num_units(); ++u)
    bytes += kStateArrays * state_array_bytes(partition.unit(u).padded, optim_pieces);
  return bytes;
}

}  // namespace zm::nvme
