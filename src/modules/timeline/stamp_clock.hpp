// Time stamps for the timeline and for the exposed-communication figures.
//
// On a host, work is synchronous and a stamp is the steady clock's time. On a GPU, kernels and
// NCCL collectives run later than the host launches them, so a stamp of device work is a CUDA
// event recorded on the stream that does the work: it fires when the stream reaches it. Device
// stamps are resolved into seconds on the host clock once the step's work is done, against an
// anchor event recorded (and waited for) at the start of the step together with the host time.
//
// Device stamps come from a StampClock, and each owner of such stamps has its own: the recorder
// of a communicator's collectives (collective_records.hpp) for them and the waits on them, the
// Tracer for its spans. A clock's new epoch invalidates its own stamps only. One pool shared by
// every communicator was reset by each one's step, while NCCL stamps every collective: a stamp
// taken before another communicator's reset and resolved after it tripped the check below, or
// silently read the event of a later stamp that had reused its slot. Each clock takes its own
// anchors, so the timelines of two clocks agree to within the time an anchor's host reading lags
// its event (microseconds).
#pragma once

#include <cstdint>
#include <memory>

namespace zm {

struct Stamp {
  double seconds = 0.0;         // host clock, when event < 0
  int32_t event = -1;           // the clock's event (its slot in the clock's pool)
  uint32_t epoch = 0;           // the clock's epoch the event belongs to
  const void* clock = nullptr;  // the clock that took it
};

// Now, on the host clock.
Stamp host_stamp();

// A pool of stamps of the work queued on streams, resolved in seconds on the host clock. In host
// builds the stamps are the host time, kept in a pool all the same, so that their bookkeeping
// (which clock took a stamp, in which epoch) is the one GPU builds run and host tests check.
class StampClock {
 public:
  StampClock();
  ~StampClock();
  StampClock(const StampClock&) = delete;
  StampClock& operator=(const StampClock&) = delete;

  // When the work queued so far on the default execution space is done: a device event on
  // Kokkos' default stream in CUDA builds.
  Stamp compute_stamp();
  // When the work queued so far on `stream` (a cudaStream_t; host builds ignore it) is done.
  Stamp stream_stamp(void* stream);
  // Starts an epoch: this clock's earlier stamps become invalid (their events are reused), a new
  // anchor is taken. Fences. A clock's first stamp starts its first epoch.
  void begin_epoch();
  // Seconds on the host clock; a device stamp waits for its event (the work is done). A stamp of
  // another clock, or of an earlier epoch of this one, is an internal error.
  double resolve(const Stamp& stamp) const;

 private:
  struct Pool;
  std::unique_ptr<Pool> pool_;
  uint32_t epoch_ = 0;  // 0: none begun
};

}  // namespace zm
