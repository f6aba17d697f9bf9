#include "modules/mpi_staging/host_staging.hpp"

namespace zm {

namespace {

using DeviceBytes = Kokkos::View<char*, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
using ConstDeviceBytes =
    Kokkos::View<const char*, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
using HostSpan = Kokkos::View<char*, HostStagingSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

// Device bytes to a host buffer, and back.
void to_host(char* host, const void* device, size_t bytes) {
  Kokkos::deep_copy(HostSpan(host, bytes),
                    ConstDeviceBytes(static_cast<const char*>(device), bytes));
}
void to_device(void* device, const char* host, size_t bytes) {
  Kokkos::deep_copy(DeviceBytes(static_cast<char*>(device), bytes),
                    HostSpan(const_cast<char*>(host), bytes));
}

}  // namespace

std::function<void()> HostStaging::stage(MpiBuffers& call) {
  if (call.send_bytes + call.recv_bytes == 0) return nullptr;
  // Shared, so that the completion (a std::function, copyable) can hold the lease.
  auto host = std::make_shared<StagingLease>(pool_->acquire(call.recv_bytes + call.send_bytes));
  char* host_recv = host->data();
  if (call.read_bytes > 0)
    to_host(host_recv + call.read_offset, static_cast<const char*>(call.recv) + call.read_offset,
            call.read_bytes);
  if (call.send_bytes > 0) {
    char* host_send = host_recv + call.recv_bytes;
    to_host(host_send, call.send, call.send_bytes);
    call.send = host_send;
  }
  call.recv = host_recv;
  return [host, result = call.result, bytes = call.result_bytes] {
    to_device(result, host->data(), bytes);
  };
}

}  // namespace zm
