// Time stamps for timelines and for exposed-communication accounting.
//
// On a host, work is synchronous and a stamp is the steady clock's time. On a GPU, kernels and
// NCCL collectives run later than the host launches them, so a stamp of device work is a CUDA
// event recorded on the stream that does the work: it fires when the stream reaches it. Device
// stamps are resolved into seconds on the host clock once the step's work is done, against an
// anchor event recorded (and waited for) at the start of the step together with the host time.
#pragma once

#include <cstdint>

namespace zm {

struct Stamp {
  double seconds = 0.0;  // host clock, when event < 0
  int32_t event = -1;    // a device event of this step's pool, resolved by resolve_stamp
};

// Now, on the host clock.
Stamp host_stamp();
// When the work queued so far on the default execution space is done: the host time in host
// builds, a device event on Kokkos' default stream in CUDA builds.
Stamp compute_stamp();
// When the work queued so far on `stream` (a cudaStream_t) is done; host builds ignore it.
Stamp stream_stamp(void* stream);

// Starts a step's stamps: earlier device stamps become invalid, a new anchor is taken. Fences.
void begin_stamp_epoch();
// Seconds on the host clock; device stamps wait for their event (the step's work is done).
double resolve_stamp(const Stamp& stamp);

}  // namespace zm
