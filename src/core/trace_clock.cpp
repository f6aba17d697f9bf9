#include "core/trace_clock.hpp"

#include <vector>

#include "core/compat.hpp"
#include "core/error.hpp"
#include "core/timer.hpp"

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

namespace zm {

Stamp host_stamp() {
  return Stamp{wall_seconds(), -1};
}

#if defined(KOKKOS_ENABLE_CUDA)

namespace {

// Events are created once and reused every step: creating one per stamp would cost more than
// the work it times.
struct EventPool {
  std::vector<cudaEvent_t> events;
  size_t used = 0;
  cudaEvent_t anchor = nullptr;
  double anchor_seconds = 0.0;
};

EventPool& pool() {
  static EventPool instance;
  return instance;
}

void check(cudaError_t status, const char* what) {
  ZM_ASSERT(status == cudaSuccess, "{}: {}", what, cudaGetErrorString(status));
}

cudaEvent_t new_event() {
  cudaEvent_t event = nullptr;
  check(cudaEventCreate(&event), "cudaEventCreate");
  return event;
}

}  // namespace

Stamp stream_stamp(void* stream) {
  EventPool& p = pool();
  if (!p.anchor) begin_stamp_epoch();
  if (p.used == p.events.size()) p.events.push_back(new_event());
  const size_t index = p.used++;
  check(cudaEventRecord(p.events[index], static_cast<cudaStream_t>(stream)), "cudaEventRecord");
  return Stamp{0.0, static_cast<int32_t>(index)};
}

Stamp compute_stamp() {
  return stream_stamp(ExecSpace().cuda_stream());
}

void begin_stamp_epoch() {
  EventPool& p = pool();
  Kokkos::fence();
  if (!p.anchor) p.anchor = new_event();
  check(cudaEventRecord(p.anchor, ExecSpace().cuda_stream()), "cudaEventRecord");
  check(cudaEventSynchronize(p.anchor), "cudaEventSynchronize");
  p.anchor_seconds = wall_seconds();
  p.used = 0;
}

double resolve_stamp(const Stamp& stamp) {
  if (stamp.event < 0) return stamp.seconds;
  EventPool& p = pool();
  ZM_ASSERT(static_cast<size_t>(stamp.event) < p.used, "a device stamp of an earlier step");
  cudaEvent_t event = p.events[static_cast<size_t>(stamp.event)];
  check(cudaEventSynchronize(event), "cudaEventSynchronize");
  float milliseconds = 0.0f;
  check(cudaEventElapsedTime(&milliseconds, p.anchor, event), "cudaEventElapsedTime");
  return p.anchor_seconds + 1e-3 * static_cast<double>(milliseconds);
}

#else

Stamp compute_stamp() {
  return host_stamp();
}

Stamp stream_stamp(void* /*stream*/) {
  return host_stamp();
}

void begin_stamp_epoch() {
  Kokkos::fence();
}

double resolve_stamp(const Stamp& stamp) {
  return stamp.seconds;
}

#endif

}  // namespace zm
