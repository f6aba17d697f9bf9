#include "comm/comm_types/mpi_staging.hpp"

#include <mpi.h>

#include <cstring>
#include <utility>

namespace zm {

namespace {

using DeviceBytes = Kokkos::View<char*, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
using ConstDeviceBytes =
    Kokkos::View<const char*, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

// Moves an unstaged in-place reduce-scatter result from the start of the buffer to its slot at
// `offset` (the two may overlap).
void move_to_slot(char* base, size_t offset, size_t bytes) {
  if (offset == 0) return;
  if (device_is_host()) {
    std::memmove(base + offset, base, bytes);
  } else {
    // Device memory without staging (GPU-aware MPI): copy through a temporary.
    Kokkos::View<char*, MemSpace> tmp("mpi_rs_tmp", bytes);
    Kokkos::deep_copy(tmp, ConstDeviceBytes(base, bytes));
    Kokkos::deep_copy(DeviceBytes(base + offset, bytes), tmp);
  }
}

// MPI's in-place reduce-scatter reads the whole input from the receive buffer and leaves the
// result at its start; the caller's convention wants it at this rank's slot, so the result is
// moved there on completion (the rest of the buffer is scratch afterwards).
StagedBuffers stage_reduce_scatter_in_place(char* base, size_t shard_bytes, int rank, int size,
                                            bool staging) {
  const size_t total_bytes = shard_bytes * static_cast<size_t>(size);
  const size_t offset = static_cast<size_t>(rank) * shard_bytes;
  StagedBuffers buffers;
  buffers.send = MPI_IN_PLACE;
  buffers.recv = base;
  const bool staged = staging && total_bytes > 0;
  if (staged) {
    buffers.host_recv = HostBytes("mpi_staging", total_bytes);
    Kokkos::deep_copy(buffers.host_recv, ConstDeviceBytes(base, total_bytes));
    buffers.recv = buffers.host_recv.data();
  }
  HostBytes host = buffers.host_recv;
  buffers.on_complete = [base, offset, shard_bytes, host, staged] {
    if (staged) {
      Kokkos::deep_copy(DeviceBytes(base + offset, shard_bytes),
                        Kokkos::subview(host, std::make_pair(size_t(0), shard_bytes)));
    } else {
      move_to_slot(base, offset, shard_bytes);
    }
  };
  return buffers;
}

}  // namespace

StagedBuffers stage_in_place(void* data, size_t bytes, bool staging) {
  StagedBuffers buffers;
  buffers.send = MPI_IN_PLACE;
  buffers.recv = data;
  if (!staging || bytes == 0) return buffers;
  buffers.host_recv = HostBytes("mpi_staging", bytes);
  Kokkos::deep_copy(buffers.host_recv, ConstDeviceBytes(static_cast<const char*>(data), bytes));
  buffers.recv = buffers.host_recv.data();
  HostBytes host = buffers.host_recv;
  buffers.on_complete = [host, data, bytes] {
    Kokkos::deep_copy(DeviceBytes(static_cast<char*>(data), bytes), host);
  };
  return buffers;
}

StagedBuffers stage_reduce_scatter(const void* send, void* recv, size_t shard_bytes, int rank,
                                   int size, bool in_place, bool staging) {
  if (in_place)
    return stage_reduce_scatter_in_place(static_cast<char*>(const_cast<void*>(send)), shard_bytes,
                                         rank, size, staging);
  const size_t total_bytes = shard_bytes * static_cast<size_t>(size);
  StagedBuffers buffers;
  buffers.send = send;
  buffers.recv = recv;
  if (!staging || total_bytes == 0) return buffers;
  buffers.host_send = HostBytes("mpi_staging_send", total_bytes);
  buffers.host_recv = HostBytes("mpi_staging_recv", shard_bytes);
  Kokkos::deep_copy(buffers.host_send,
                    ConstDeviceBytes(static_cast<const char*>(send), total_bytes));
  buffers.send = buffers.host_send.data();
  buffers.recv = buffers.host_recv.data();
  HostBytes host = buffers.host_recv;
  buffers.on_complete = [recv, host, shard_bytes] {
    Kokkos::deep_copy(DeviceBytes(static_cast<char*>(recv), shard_bytes), host);
  };
  return buffers;
}

StagedBuffers stage_all_gather(const void* send, void* recv, size_t shard_bytes, int rank, int size,
                               bool in_place, bool staging) {
  const size_t total_bytes = shard_bytes * static_cast<size_t>(size);
  const size_t offset = static_cast<size_t>(rank) * shard_bytes;
  StagedBuffers buffers;
  buffers.send = in_place ? MPI_IN_PLACE : send;
  buffers.recv = recv;
  if (!staging || total_bytes == 0) return buffers;
  buffers.host_recv = HostBytes("mpi_staging_recv", total_bytes);
  if (in_place) {
    Kokkos::deep_copy(
        Kokkos::subview(buffers.host_recv, std::make_pair(offset, offset + shard_bytes)),
        ConstDeviceBytes(static_cast<const char*>(send), shard_bytes));
  } else {
    buffers.host_send = HostBytes("mpi_staging_send", shard_bytes);
    Kokkos::deep_copy(buffers.host_send,
                      ConstDeviceBytes(static_cast<const char*>(send), shard_bytes));
    buffers.send = buffers.host_send.data();
  }
  buffers.recv = buffers.host_recv.data();
  HostBytes host = buffers.host_recv;
  buffers.on_complete = [recv, host, total_bytes] {
    Kokkos::deep_copy(DeviceBytes(static_cast<char*>(recv), total_bytes), host);
  };
  return buffers;
}

}  // namespace zm
