// Exposed communication: how much of a step's communication compute did not hide.
//
//   exposed    the time this rank blocked on collectives that had not completed (the sum of its
//              wait intervals; waits do not overlap, a rank waits for one thing at a time)
//   in flight  the time at least one collective was in flight (the length of the union of the
//              [post, completion] intervals of the step's collectives)
//   overlap efficiency = 1 - exposed / in flight: 1 when compute hid every collective, 0 when the
//              rank waited through all of them (blocking collectives); undefined without any.
#pragma once

#include <array>
#include <vector>

#include "comm/communicator.hpp"
#include "modules/timeline/collective_records.hpp"
#include "modules/timeline/trace.hpp"

namespace zm {

struct CommExposure {
  double exposed = 0.0;    // seconds
  double in_flight = 0.0;  // seconds
};

CommExposure exposure_of(const std::vector<CollectiveTimes>& collectives);

// Per collective kind, the seconds with at least one collective of that kind in flight (the union
// of their posted..completed intervals): the time that kind's bytes took, for its bus bandwidth.
std::array<double, kCommOps> in_flight_by_op(const std::vector<CollectiveTimes>& collectives);

// Bus bandwidth, nccl-tests' convention: busbw = algbw x 2(n-1)/n for all_reduce and x (n-1)/n
// for all_gather and reduce_scatter, algbw = S / t (S the whole buffer). ring_bytes() already
// counts S times that factor, so busbw = ring bytes / t. Bytes/s; NaN when nothing was timed.
double bus_bandwidth(double ring_bytes_sent, double seconds);

// 1 - exposed / in_flight; NaN when nothing was in flight.
double overlap_efficiency(double exposed, double in_flight);

// The step's collectives (and the waits on them) as events of the timeline, when the tracer is
// active.
void add_to_trace(Tracer& tracer, const std::vector<CollectiveTimes>& collectives);

}  // namespace zm
