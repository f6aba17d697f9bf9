// How the engine executes its step schedule (zero/schedule.hpp): a path says which scheduled
// collective it posts and where its data is; post_scheduled hands both to the entry's strategy
// (zero/collective_strategy.hpp), which posts each hop on the hop's communicator with the counts
// and the type of its wire record (checked). No other code of the engine posts a collective, so
// what a step moves is the schedule the planner prices.
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
