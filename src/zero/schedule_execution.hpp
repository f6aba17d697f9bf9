// How the engine executes its step schedule (zero/schedule.hpp): a path says which scheduled
// collective it posts and where its data is, and the entry's strategy posts it
// (zero/collective_strategy.hpp). No other code of the engine posts a collective.
#pragma once

#include "comm/communicator.hpp"
#include "zero/collective_strategy.hpp"
#include "zero/schedule.hpp"

namespace zm {

template <typename Real>
class ZeroEngineT;

// Posts `c` with its data on the engine's communicators and returns its request (empty where the
// strategy completed it at once).
template <typename Real>
CommRequest post_scheduled(const ScheduledCollective& c, ZeroEngineT<Real>& engine,
                           const ScheduledBuffers& buffers);
// Once `c`'s request completed, before its result is read.
template <typename Real>
void scheduled_arrived(const ScheduledCollective& c, ZeroEngineT<Real>& engine,
                       const ScheduledBuffers& buffers);
// Where the entries of `role` are all waited: whatever their strategies still hold in flight.
template <typename Real>
void finish_scheduled(ScheduleRole role, ZeroEngineT<Real>& engine);

}  // namespace zm
