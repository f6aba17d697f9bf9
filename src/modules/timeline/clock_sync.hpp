// Aligning the ranks' clocks for the timeline. Steady clocks of different nodes have unrelated
// origins (and those of one node may differ too), so each rank measures its offset to rank 0's
// clock at start-up: it sends its time to rank 0 and gets rank 0's time back, several times, and
// keeps the round trip that was fastest (Cristian's algorithm). The error is at most half that
// round trip.
#pragma once

#include <mpi.h>

namespace zm {

struct ClockOffset {
  double seconds = 0.0;      // add to this rank's wall_seconds() to get rank 0's clock
  double uncertainty = 0.0;  // half the fastest round trip (0 on rank 0)
};

// Collective over `comm` (point-to-point with rank 0, rank by rank).
ClockOffset clock_offset_to_rank0(MPI_Comm comm, int rounds = 16);

}  // namespace zm
