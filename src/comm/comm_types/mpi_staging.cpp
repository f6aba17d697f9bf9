#include "comm/comm_types/mpi_staging.hpp"

#include <mpi.h>

#include <utility>

namespace zm {

namespace {

using DeviceBytes = Kokkos::View<char*, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
using ConstDeviceBytes =
    Kokkos::View<const char*, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
using HostSpan = Kokkos::View<char*, StagingSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

// Device bytes to a host buffer, and back.
void to_host(char* host, const void* device, size_t bytes) {
  Kokkos::deep_copy(HostSpan(host, bytes),
                    ConstDeviceBytes(static_cast<const char*>(device), bytes));
}
void to_device(void* device, const char* host, size_t bytes) {
  Kokkos::deep_copy(DeviceBytes(static_cast<char*>(device), bytes),
                    HostSpan(const_cast<char*>(host), bytes));
}

// Moves an unstaged in-place reduce-scatter result from the start of the buffer to its slot at
// `offset`. The two never overlap (offset is rank * bytes, and rank 0's result is in place
// already), so one copy does it, on the device too, without a temporary.
void move_to_slot(char* base, size_t offset, size_t bytes) {
  if (offset == 0) return;
  Kokkos::deep_copy(DeviceBytes(base + offset, bytes), ConstDeviceBytes(base, bytes));
}

// One pool buffer holds a host copy of `send` (send_bytes) and then the received bytes
// (recv_bytes), copied back to `recv` on completion. Without a pool MPI reads and writes the
// caller's buffers.
StagedBuffers stage_send_then_recv(const void* send, void* recv, size_t send_bytes,
                                   size_t recv_bytes, StagingPool* pool) {
  StagedBuffers buffers;
  buffers.send = send;
  buffers.recv = recv;
  if (pool == nullptr || send_bytes == 0) return buffers;
  buffers.host = pool->acquire(send_bytes + recv_bytes);
  char* host_send = buffers.host.data();
  char* host_recv = host_send + send_bytes;
  to_host(host_send, send, send_bytes);
  buffers.send = host_send;
  buffers.recv = host_recv;
  buffers.on_complete = [recv, host_recv, recv_bytes] { to_device(recv, host_recv, recv_bytes); };
  return buffers;
}

// MPI's in-place reduce-scatter reads the whole input from the receive buffer and leaves the
// result at its start; the caller's convention wants it at this rank's slot, so the result is
// moved there on completion (the rest of the buffer is scratch afterwards).
StagedBuffers stage_reduce_scatter_in_place(char* base, size_t shard_bytes, int rank, int size,
                                            StagingPool* pool) {
  const size_t total_bytes = shard_bytes * static_cast<size_t>(size);
  const size_t offset = static_cast<size_t>(rank) * shard_bytes;
  StagedBuffers buffers;
  buffers.send = MPI_IN_PLACE;
  buffers.recv = base;
  if (pool == nullptr || total_bytes == 0) {
    buffers.on_complete = [base, offset, shard_bytes] { move_to_slot(base, offset, shard_bytes); };
    return buffers;
  }
  buffers.host = pool->acquire(total_bytes);
  char* host = buffers.host.data();
  to_host(host, base, total_bytes);
  buffers.recv = host;
  buffers.on_complete = [base, offset, shard_bytes, host] {
    to_device(base + offset, host, shard_bytes);
  };
  return buffers;
}

}  // namespace

StagedBuffers stage_in_place(void* data, size_t bytes, StagingPool* pool) {
  StagedBuffers buffers;
  buffers.send = MPI_IN_PLACE;
  buffers.recv = data;
  if (pool == nullptr || bytes == 0) return buffers;
  buffers.host = pool->acquire(bytes);
  char* host = buffers.host.data();
  to_host(host, data, bytes);
  buffers.recv = host;
  buffers.on_complete = [host, data, bytes] { to_device(data, host, bytes); };
  return buffers;
}

// Not in place: one pool buffer holds the send copy (all shards) and then the received shard.
StagedBuffers stage_reduce_scatter(const void* send, void* recv, size_t shard_bytes, int rank,
                                   int size, bool in_place, StagingPool* pool) {
  if (in_place)
    return stage_reduce_scatter_in_place(static_cast<char*>(const_cast<void*>(send)), shard_bytes,
                                         rank, size, pool);
  return stage_send_then_recv(send, recv, shard_bytes * static_cast<size_t>(size), shard_bytes,
                              pool);
}

// Not in place: one pool buffer holds the gathered result and then the send copy.
StagedBuffers stage_all_gather(const void* send, void* recv, size_t shard_bytes, int rank, int size,
                               bool in_place, StagingPool* pool) {
  const size_t total_bytes = shard_bytes * static_cast<size_t>(size);
  const size_t offset = static_cast<size_t>(rank) * shard_bytes;
  StagedBuffers buffers;
  buffers.send = in_place ? MPI_IN_PLACE : send;
  buffers.recv = recv;
  if (pool == nullptr || total_bytes == 0) return buffers;
  buffers.host = pool->acquire(total_bytes + (in_place ? 0 : shard_bytes));
  char* host_recv = buffers.host.data();
  if (in_place) {
    to_host(host_recv + offset, send, shard_bytes);
  } else {
    char* host_send = host_recv + total_bytes;
    to_host(host_send, send, shard_bytes);
    buffers.send = host_send;
  }
  buffers.recv = host_recv;
  buffers.on_complete = [recv, host_recv, total_bytes] { to_device(recv, host_recv, total_bytes); };
  return buffers;
}

// One pool buffer holds the send copy and then the received blocks.
StagedBuffers stage_all_to_all(const void* send, void* recv, size_t block_bytes, int size,
                               StagingPool* pool) {
  const size_t total_bytes = block_bytes * static_cast<size_t>(size);
  return stage_send_then_recv(send, recv, total_bytes, total_bytes, pool);
}

}  // namespace zm
