#include "modules/zeropp/int8_gather.hpp"

#include "core/compat.hpp"

namespace zm {

template <typename Real>
CommRequest post_int8_gather(const ScheduledCollective& c, const MeshComms& comms,
                             kernels::TeamShape shape, const Real* piece, int64_t n,
                             int64_t block, uint8_t* packed) {
  const ScheduleHop& hop = c.hops.front();
  const kernels::QuantizedSegment segment = int8_segment(n, block);
  uint8_t* own = packed + communicator_of(comms, hop).rank() * segment.bytes();
  kernels::quantize_int8(shape, piece, n, block, own);
  // In place: the rank's segment is at its place.
  return post_hop(c, hop, CommOp::AllGather, own, packed, static_cast<size_t>(segment.bytes()),
                  DType::U8, comms);
}

template <typename Real>
void unpack_int8_gather(kernels::TeamShape shape, const uint8_t* packed, int segments, int64_t n,
                        int64_t block, Real* out) {
  kernels::dequantize_int8(shape, packed, segments, n, block, out);
}

PlannedCollective planned_int8_gather(int64_t n, int64_t block, int ranks, int element_bytes,
                                      CommLevel level) {
  const int64_t segment = int8_segment(n, block).bytes();
  const int64_t passes = n * element_bytes + segment + ranks * segment + ranks * n * element_bytes;
  return {CommOp::AllGather, ranks * segment, 1, ranks, level, passes};
}

#define ZM_INSTANTIATE_INT8_GATHER(Real)                                                       \
  template CommRequest post_int8_gather(const ScheduledCollective&, const MeshComms&,          \
                                        kernels::TeamShape, const Real*, int64_t, int64_t,     \
                                        uint8_t*);                                             \
  template void unpack_int8_gather(kernels::TeamShape, const uint8_t*, int, int64_t, int64_t,    \
                                   Real*);
ZM_INSTANTIATE_INT8_GATHER(float)
#if ZEROMINI_HAVE_BF16
ZM_INSTANTIATE_INT8_GATHER(bf16)
#endif
#undef ZM_INSTANTIATE_INT8_GATHER

}  // namespace zm
