#include "modules/zeropp/quantized_gradients.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "kernels/counter_rng.hpp"
#include "kernels/elementwise.hpp"
#include "modules/zeropp/cross_node.hpp"
#include "zero/engine.hpp"

namespace zm {

namespace {

const char* const kSend = "qgz_send";
const char* const kRecv = "qgz_recv";
const char* const kResidual = "qgz_residual";

// Where step 1 puts destination d's segment of `ranks`: in destination order, or for the hop within
// a node (per_node = k > 1) peer by peer, the destinations of local index j (j, k + j, 2k + j,
// ...: the group's ranks are node by node) together, in node order.
int64_t send_slot(int64_t d, int64_t ranks, int64_t per_node) {
  return d % per_node * (ranks / per_node) + d / per_node;
}

int64_t largest_shard(const Partition& partition, bool sub) {
  int64_t out = 0;
  for (int u = 0; u < partition.num_units(); ++u)
    out = std::max(out, sub ? partition.unit(u).sub_shard : partition.unit(u).shard);
  return out;
}

}  // namespace

kernels::QuantizedSegment grad_segment(const ZeroppOptions& options, int64_t values) {
  return {values, options.quantize_block, options.grad_bits};
}

std::vector<BufferSpec> quantized_gradient_buffers(const Partition& partition,
                                                   const ZeroppOptions& options,
                                                   const ZeroMesh& mesh) {
  if (!options.quantize_grads) return {};
  // Within the group: one segment per rank of the largest shard, sent and received (in two hops
  // by node as well: G segments within the node, then N <= G across).
  const int64_t in_group =
      partition.ranks() * grad_segment(options, largest_shard(partition, false)).bytes();
  int64_t send = in_group, recv = in_group;
  if (mesh.sub_sharded()) {  // across: one segment per replica of the largest sub-shard
    const int64_t across =
        mesh.groups() * grad_segment(options, largest_shard(partition, true)).bytes();
    send = std::max(send, across);
    recv = std::max(recv, across);
  } else if (mesh.hybrid()) {  // across: the shard's one segment, and every replica's
    const int64_t segment = grad_segment(options, largest_shard(partition, false)).bytes();
    recv = std::max(recv, mesh.groups() * segment);
  }
  std::vector<BufferSpec> out = {{kSend, MemCategory::CommBuffers, send, 1},
                                 {kRecv, MemCategory::CommBuffers, recv, 1}};
  if (options.error_feedback)  // every unit's padded contribution, in the reduce type
    out.push_back({kResidual, MemCategory::Gradients, partition.padded_total(),
                   element_bytes(options.policy.reduce)});
  return out;
}

// The passes: the contribution read and its segments written; the segments received read and
// the shard written (under error feedback also the residual read, written and read again). In two
// hops, the hop within the node also writes the N sums of its segments, and the hop across reads
// them, writes and reads their N segments and writes the shard.
PlannedCollectives grad_exchange_in_group(const ZeroppOptions& options, const UnitPartition& unit,
                                          int group, NodeSpan span, CommLevel level) {
  const int64_t element = element_bytes(options.policy.reduce);
  const int64_t segment = grad_segment(options, unit.shard).bytes();
  const int64_t segments = group * segment;
  int64_t passes = unit.padded * element + 2 * segments;
  if (options.error_feedback) passes += 3 * unit.padded * element;
  if (!hops_by_node(span))
    return {{CommOp::AllToAll, segments, 1, group, level, passes + unit.shard * element}};
  const int nodes = span.nodes, k = span.per_node;
  const int64_t sums = nodes * unit.shard * element;
  const int64_t across = sums + 2 * nodes * segment + unit.shard * element;
  return {{CommOp::AllToAll, segments, 1, k, level, passes + sums, NodeSpan{1, k}},
          {CommOp::AllToAll, nodes * segment, 1, nodes, level, across, NodeSpan{nodes, 1}}};
}

PlannedCollective grad_exchange_across(const ZeroppOptions& options, const UnitPartition& unit,
                                       int replicas, bool hpz, CommLevel level) {
  const int64_t element = element_bytes(options.policy.reduce);
  if (hpz) {
    const int64_t segments = replicas * grad_segment(options, unit.sub_shard).bytes();
    const int64_t passes = unit.shard * element + 2 * segments + unit.sub_shard * element;
    return {CommOp::AllToAll, segments, 1, replicas, level, passes};
  }
  const int64_t segment = grad_segment(options, unit.shard).bytes();
  const int64_t passes = 2 * unit.shard * element + (1 + replicas) * segment;
  return {CommOp::AllGather, replicas * segment, 1, replicas, level, passes};
}

QuantizedGradients::QuantizedGradients(const Partition& partition, const ZeroppOptions& options,
                                       PlannedAllocator& alloc, int world_rank)
    : partition_(&partition),
      layout_(grad_segment(options, 0)),
      stochastic_(options.stochastic_rounding),
      feedback_(options.error_feedback),
      seed_(kernels::splitmix64(static_cast<uint64_t>(options.seed) ^ 0x7167'5a2b'6772'6164ull) ^
            kernels::splitmix64(static_cast<uint64_t>(world_rank) + 1)) {
  send_ = alloc.take<uint8_t>(kSend);
  recv_ = alloc.take<uint8_t>(kRecv);
  if (!feedback_) return;
  // Zero-initialised (Kokkos' default): the first contribution has nothing to make up for.
  if (element_bytes(options.policy.reduce) == 4) residual_f32_ = alloc.take<float>(kResidual);
#if ZEROMINI_HAVE_BF16
  else
    residual_bf16_ = alloc.take<bf16>(kResidual);
#endif
}

template <typename T>
T* QuantizedGradients::residual(int unit) {
  T* base = nullptr;
  if constexpr (std::is_same_v<T, float>) base = residual_f32_.data();
#if ZEROMINI_HAVE_BF16
  if constexpr (std::is_same_v<T, bf16>) base = residual_bf16_.data();
#endif
  ZM_ASSERT(base != nullptr, "qgZ residual of the wrong type");
  return base + partition_->unit(unit).padded_offset;
}

template <typename T>
void QuantizedGradients::quantize(kernels::TeamShape shape, const T* x, int64_t pieces,
                                  int64_t piece, int64_t per_node) {
  kernels::QuantizedSegment segment = layout_;
  segment.values = piece;
  const auto rounding = stochastic_ ? kernels::Rounding::Stochastic : kernels::Rounding::Nearest;
  const uint64_t seed = seed_ + quantizations_++;
  for (int64_t p = 0; p < pieces; ++p) {
    uint8_t* out = send_.data() + send_slot(p, pieces, per_node) * segment.bytes();
    const auto first = static_cast<uint64_t>(p * piece);  // keyed by piece, wherever it goes
    if (segment.bits == 4)
      kernels::quantize_int4(shape, x + p * piece, piece, segment.block, out, rounding, seed,
                             first);
    else
      kernels::quantize_int8(shape, x + p * piece, piece, segment.block, out, rounding, seed,
                             first);
  }
}

template <typename T>
void QuantizedGradients::quantize_contribution(kernels::TeamShape shape, int unit, T* x,
                                               int64_t ranks, int64_t per_node) {
  const UnitPartition& p = partition_->unit(unit);
  T* kept = feedback_ ? residual<T>(unit) : nullptr;
  if (kept) kernels::add_into(shape, x, kept, p.padded);  // what the last time lost
  quantize(shape, x, ranks, p.shard, per_node);
  if (!kept) return;
  // What this time loses: x minus its dequantized segments, piece by piece from their slots.
  kernels::QuantizedSegment segment = layout_;
  segment.values = p.shard;
  for (int64_t d = 0; d < ranks; ++d) {
    const uint8_t* packed = send_.data() + send_slot(d, ranks, per_node) * segment.bytes();
    if (segment.bits == 4)
      kernels::dequantize_int4(shape, packed, 1, p.shard, segment.block, kept + d * p.shard);
    else
      kernels::dequantize_int8(shape, packed, 1, p.shard, segment.block, kept + d * p.shard);
  }
  kernels::residual_of(shape, kept, x, p.padded);
}

template <typename T>
void QuantizedGradients::reduce_in_group(const ScheduledCollective& c, const MeshComms& comms, T* x,
                                         T* out, kernels::TeamShape shape) {
  const UnitPartition& p = partition_->unit(c.unit);
  const ScheduleHop& hop = c.hops.front();
  const int ranks = hop.wire.ranks;
  kernels::QuantizedSegment segment = layout_;
  segment.values = p.shard;
  quantize_contribution(shape, c.unit, x, ranks, 1);
  post_hop(c, hop, CommOp::AllToAll, send_.data(), recv_.data(),
           static_cast<size_t>(segment.bytes()), DType::U8, comms)
      .wait(true);
  kernels::dequantize_sum(shape, recv_.data(), ranks, p.shard, segment.block, segment.bits, out);
}

template <typename T>
void QuantizedGradients::reduce_in_group_by_node(const ScheduledCollective& c,
                                                 const MeshComms& comms, T* x, T* out,
                                                 kernels::TeamShape shape) {
  const UnitPartition& p = partition_->unit(c.unit);
  const ScheduleHop &within = c.hops[0], &across = c.hops[1];
  const int k = within.wire.ranks, nodes = across.wire.ranks;
  kernels::QuantizedSegment segment = layout_;
  segment.values = p.shard;
  const auto bytes = static_cast<size_t>(segment.bytes());
  // 2a: to local peer j the segments of the destinations of local index j, node by node.
  quantize_contribution(shape, c.unit, x, int64_t(k) * nodes, k);
  post_hop(c, within, CommOp::AllToAll, send_.data(), recv_.data(), nodes * bytes, DType::U8, comms)
      .wait(true);
  // 2b: from each local peer, in local order, N segments: node n's sum takes every N-th segment
  // from the n-th. The sums go into x (scratch now, and N shards long at least).
  for (int n = 0; n < nodes; ++n)
    kernels::dequantize_sum(shape, recv_.data() + n * bytes, k, p.shard, segment.block,
                            segment.bits, x + int64_t(n) * p.shard, false, nodes);
  quantize(shape, x, nodes, p.shard);
  // 2c and 3: segment n to node n's rank of this local index; their sum, in node order.
  post_hop(c, across, CommOp::AllToAll, send_.data(), recv_.data(), bytes, DType::U8, comms)
      .wait(true);
  kernels::dequantize_sum(shape, recv_.data(), nodes, p.shard, segment.block, segment.bits, out);
}

template <typename T>
void QuantizedGradients::reduce_across(const ScheduledCollective& c, const MeshComms& comms,
                                       T* shard, kernels::TeamShape shape) {
  const UnitPartition& p = partition_->unit(c.unit);
  const ScheduleHop& hop = c.hops.front();
  const int groups = hop.wire.ranks;
  kernels::QuantizedSegment segment = layout_;
  if (hop.wire.op == CommOp::AllToAll) {  // one segment per sub-shard; this replica sums its own
    segment.values = p.sub_shard;
    quantize(shape, shard, groups, p.sub_shard);
    post_hop(c, hop, CommOp::AllToAll, send_.data(), recv_.data(),
             static_cast<size_t>(segment.bytes()), DType::U8, comms)
        .wait(true);
    const int replica = communicator_of(comms, hop).rank();
    kernels::dequantize_sum(shape, recv_.data(), groups, p.sub_shard, segment.block, segment.bits,
                            shard + replica * p.sub_shard);
    return;
  }
  // Every replica needs the whole shard: each sends the same one segment to all.
  segment.values = p.shard;
  quantize(shape, shard, 1, p.shard);
  post_hop(c, hop, CommOp::AllGather, send_.data(), recv_.data(),
           static_cast<size_t>(segment.bytes()), DType::U8, comms)
      .wait(true);
  kernels::dequantize_sum(shape, recv_.data(), groups, p.shard, segment.block, segment.bits, shard);
}

#define ZM_INSTANTIATE_QGZ(T)                                                                      \
  template void QuantizedGradients::reduce_in_group<T>(                                            \
      const ScheduledCollective&, const MeshComms&, T*, T*, kernels::TeamShape);                   \
  template void QuantizedGradients::reduce_in_group_by_node<T>(                                    \
      const ScheduledCollective&, const MeshComms&, T*, T*, kernels::TeamShape);                   \
  template void QuantizedGradients::reduce_across<T>(const ScheduledCollective&, const MeshComms&, \
                                                     T*, kernels::TeamShape);
ZM_INSTANTIATE_QGZ(float)
#if ZEROMINI_HAVE_BF16
ZM_INSTANTIATE_QGZ(bf16)
#endif
#undef ZM_INSTANTIATE_QGZ

}  // namespace zm
