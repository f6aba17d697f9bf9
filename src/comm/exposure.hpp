// Exposed communication: how much of a step's communication compute did not hide.
//
//   exposed    the time this rank blocked on collectives that had not completed (the sum of its
//              wait intervals; waits do not overlap, a rank waits for one thing at a time)
//   in flight  the time at least one collective was in flight (the length of the union of the
//              [post, completion] intervals of the step's collectives)
//   overlap efficiency = 1 - exposed / in flight: 1 when compute hid every collective, 0 when the
//              rank waited through all of them (blocking collectives); undefined without any.
#pragma once

#include <vector>

#include "comm/communicator.hpp"
#include "core/trace.hpp"

namespace zm {

struct CommExposure {
  double exposed = 0.0;    // seconds
  double in_flight = 0.0;  // seconds
};

CommExposure exposure_of(const std::vector<CollectiveTimes>& collectives);

// 1 - exposed / in_flight; NaN when nothing was in flight.
double overlap_efficiency(double exposed, double in_flight);

// The step's collectives (and the waits on them) as events of the timeline, when the tracer is
// active.
void add_to_trace(Tracer& tracer, const std::vector<CollectiveTimes>& collectives);

}  // namespace zm
