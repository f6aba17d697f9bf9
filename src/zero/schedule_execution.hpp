// How the engine executes its step schedule (zero/schedule.hpp): a path says which scheduled
// collective it posts and where its data is; post_scheduled takes the communicator, the counts
// and the type from the schedule's entry and runs the entry's strategy. No other code of the
// engine posts a collective, so what a step moves is the schedule the planner prices.
#pragma once

#include <cstdint>

#include "comm/communicator.hpp"
#include "comm/mesh_comms.hpp"
#include "zero/schedule.hpp"

namespace zm {

template <typename Real>
class ZeroEngineT;
class QuantizedGradients;

// Where a scheduled collective's data is.
struct ScheduledBuffers {
  // This rank's contribution: the whole padded unit (reductions within the group; a quantized
  // one uses it as scratch), its shard (reductions across the groups) or its piece (gathers).
  void* in;
  // The result: the rank's piece of the sum (reduce-scatter, the quantized reduction within the
  // group; in `in`'s buffer or elsewhere), the summed buffer (all-reduce, in place) or the whole
  // (gathers). The quantized exchange across the groups sums `in` in place.
  void* out;
  QuantizedGradients* qgz = nullptr;  // qgZ's scratch and state (quantized reductions)
  uint8_t* packed = nullptr;          // qwZ's packed segments (int8 gathers in the shard group)
};

// The communicator of a mesh group.
Communicator& communicator_of(const MeshComms& comms, MeshGroup group);

// Posts `c` on the engine's communicators and returns its request; the quantized strategies run
// to completion (their dequantize-and-sum needs the data) and return an empty request. The
// entry's wire type must be the type the engine holds the data in (asserted).
template <typename Real>
CommRequest post_scheduled(const ScheduledCollective& c, ZeroEngineT<Real>& engine,
                           const ScheduledBuffers& buffers);

}  // namespace zm
