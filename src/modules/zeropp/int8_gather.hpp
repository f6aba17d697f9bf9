// The qwZ all-gather (ZeRO++, zero.quantize_weights = "int8"): each rank quantizes its piece of n
// values into a packed segment (int8 codes, then one fp32 scale per block: kernels/quantize.hpp)
// at its place in a buffer of one segment per rank, one in-place all-gather of bytes fills in the
// others', and unpacking dequantizes every segment, the rank's own included, into the compute type,
// so that every rank of the communicator holds the same values. Stage 3's per-unit gathers in the
// shard group (paths/gathered_parameters.cpp) and hpZ's gather of the updated sub-shards across
// the groups (zero/replica_gather.hpp) both run it; the planner prices both with
// planned_int8_gather.
#pragma once

#include <cstdint>

#include "comm/communicator.hpp"
#include "modules/zeropp/quantize.hpp"
#include "kernels/team_shape.hpp"
#include "zero/collective_strategy.hpp"
#include "zero/schedule.hpp"

namespace zm {

// The packed segment of one rank's piece of n values, in blocks of `block` elements.
inline kernels::QuantizedSegment int8_segment(int64_t n, int64_t block) {
  return {n, block};
}

// Quantizes piece[0, n) into this rank's segment of `packed` (one segment per rank of the hop's
// communicator, end to end) and posts the all-gather of the segments in place: the one hop of
// schedule entry `c` (post_hop checks it against its wire record).
template <typename Real>
CommRequest post_int8_gather(const ScheduledCollective& c, const MeshComms& comms,
                             kernels::TeamShape shape, const Real* piece, int64_t n,
                             int64_t block, uint8_t* packed);

// Once that gather is complete: every one of the `segments` segments dequantized into
// out[0, segments * n).
template <typename Real>
void unpack_int8_gather(kernels::TeamShape shape, const uint8_t* packed, int segments, int64_t n,
                        int64_t block, Real* out);

// The planner's record of one such gather among `ranks` ranks of `level`, of pieces of n values
// of element_bytes each: every rank's segment as bytes, with its passes (the piece read and its
// segment written; every segment read and the ranks' n values written in the compute type).
PlannedCollective planned_int8_gather(int64_t n, int64_t block, int ranks, int element_bytes,
                                      CommLevel level);

}  // namespace zm
