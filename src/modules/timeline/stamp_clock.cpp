#include "modules/timeline/stamp_clock.hpp"

#include <vector>

#include "core/compat.hpp"
#include "core/error.hpp"
#include "core/timer.hpp"

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

namespace zm {

Stamp host_stamp() {
  return Stamp{wall_seconds(), -1, 0, nullptr};
}

namespace {
// A device stamp resolves only on the clock and in the epoch that took it: the next epoch reuses
// its slot for another stamp.
void check_current(const Stamp& stamp, const void* clock, uint32_t epoch, size_t used) {
  ZM_ASSERT(stamp.clock == clock && stamp.epoch == epoch && static_cast<size_t>(stamp.event) < used,
            "a device stamp of another clock or of an earlier epoch (epoch {}, this clock's {})",
            stamp.epoch, epoch);
}
}  // namespace

#if defined(KOKKOS_ENABLE_CUDA)

namespace {

void check(cudaError_t status, const char* what) {
  ZM_ASSERT(status == cudaSuccess, "{}: {}", what, cudaGetErrorString(status));
}

cudaEvent_t new_event() {
  cudaEvent_t event = nullptr;
  check(cudaEventCreate(&event), "cudaEventCreate");
  return event;
}

}  // namespace

// Events are created once and reused every epoch: creating one per stamp would cost more than
// the work it times.
struct StampClock::Pool {
  std::vector<cudaEvent_t> events;
  size_t used = 0;
  cudaEvent_t anchor = nullptr;
  double anchor_seconds = 0.0;
  ~Pool() {
    // At exit the CUDA runtime may be gone before its last clock: nothing to report then.
    for (cudaEvent_t event : events) cudaEventDestroy(event);
    if (anchor) cudaEventDestroy(anchor);
  }
};

Stamp StampClock::stream_stamp(void* stream) {
  if (epoch_ == 0) begin_epoch();
  Pool& p = *pool_;
  if (p.used == p.events.size()) p.events.push_back(new_event());
  const size_t index = p.used++;
  check(cudaEventRecord(p.events[index], static_cast<cudaStream_t>(stream)), "cudaEventRecord");
  return Stamp{0.0, static_cast<int32_t>(index), epoch_, this};
}

Stamp StampClock::compute_stamp() {
  return stream_stamp(ExecSpace().cuda_stream());
}

void StampClock::begin_epoch() {
  Pool& p = *pool_;
  Kokkos::fence();
  if (!p.anchor) p.anchor = new_event();
  check(cudaEventRecord(p.anchor, ExecSpace().cuda_stream()), "cudaEventRecord");
  check(cudaEventSynchronize(p.anchor), "cudaEventSynchronize");
  p.anchor_seconds = wall_seconds();
  p.used = 0;
  ++epoch_;
}

double StampClock::resolve(const Stamp& stamp) const {
  if (stamp.event < 0) return stamp.seconds;
  const Pool& p = *pool_;
  check_current(stamp, this, epoch_, p.used);
  cudaEvent_t event = p.events[static_cast<size_t>(stamp.event)];
  check(cudaEventSynchronize(event), "cudaEventSynchronize");
  float milliseconds = 0.0f;
  check(cudaEventElapsedTime(&milliseconds, p.anchor, event), "cudaEventElapsedTime");
  return p.anchor_seconds + 1e-3 * static_cast<double>(milliseconds);
}

#else

// The host time of each stamp, in the slots GPU builds give their events.
struct StampClock::Pool {
  std::vector<double> seconds;
  size_t used = 0;
};

Stamp StampClock::stream_stamp(void* /*stream*/) {
  if (epoch_ == 0) begin_epoch();
  Pool& p = *pool_;
  if (p.used == p.seconds.size()) p.seconds.push_back(0.0);
  const size_t index = p.used++;
  // Host work is done when the kernel that did it returns.
  p.seconds[index] = wall_seconds();
  return Stamp{0.0, static_cast<int32_t>(index), epoch_, this};
}

Stamp StampClock::compute_stamp() {
  return stream_stamp(nullptr);
}

void StampClock::begin_epoch() {
  Kokkos::fence();
  pool_->used = 0;
  ++epoch_;
}

double StampClock::resolve(const Stamp& stamp) const {
  if (stamp.event < 0) return stamp.seconds;
  const Pool& p = *pool_;
  check_current(stamp, this, epoch_, p.used);
  return p.seconds[static_cast<size_t>(stamp.event)];
}

#endif

StampClock::StampClock() : pool_(std::make_unique<Pool>()) {}
StampClock::~StampClock() = default;

}  // namespace zm
