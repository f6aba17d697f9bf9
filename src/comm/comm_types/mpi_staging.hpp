// Host staging for the MPI backend: where the device is a GPU and the MPI library cannot read its
// memory, each collective works on host copies of its buffers, and the results go back to the
// device when the operation completes.
//
// Each stage_* function returns the buffers to hand to the MPI call, the host buffer they may
// point into (lent by the communicator's StagingPool until the operation completes), and what
// completes the operation on the device side. With no pool the MPI call gets the device buffers
// themselves.
#pragma once

#include <cstddef>
#include <functional>

#include "comm/comm_types/staging_pool.hpp"

namespace zm {

struct StagedBuffers {
  const void* send = nullptr;  // MPI's send buffer; MPI_IN_PLACE for an in-place operation
  void* recv = nullptr;        // MPI's receive buffer: the only buffer of an in-place operation
  StagingLease host;           // where staged: the host copies of send and recv
  std::function<void()> on_complete;  // runs once MPI has completed; may be empty
};

// all_reduce and broadcast: `data` (bytes) is read and written in place.
StagedBuffers stage_in_place(void* data, size_t bytes, StagingPool* pool);

// reduce_scatter of `size` shards of `shard_bytes` each from `send` into `recv` (rank `rank`'s
// shard). In place when recv is send's slot for `rank`: MPI then leaves the result at the start
// of the buffer, and completion moves it to that slot.
StagedBuffers stage_reduce_scatter(const void* send, void* recv, size_t shard_bytes, int rank,
                                   int size, bool in_place, StagingPool* pool);

// all_gather of `send` (`shard_bytes`) into `recv` (`size` shards). In place when send is recv's
// slot for `rank`.
StagedBuffers stage_all_gather(const void* send, void* recv, size_t shard_bytes, int rank, int size,
                               bool in_place, StagingPool* pool);

// all_to_all of `size` blocks of `block_bytes` from `send` into `recv` (never in place).
StagedBuffers stage_all_to_all(const void* send, void* recv, size_t block_bytes, int size,
                               StagingPool* pool);

}  // namespace zm
