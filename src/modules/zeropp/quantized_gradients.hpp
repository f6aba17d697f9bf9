// ZeRO++ qgZ (zero.quantize_grads = "int8" | "int4"): the gradient reduce-scatter of stages 1-3
// as quantized all-to-alls, in two levels (the mesh's shard group, then its replicas):
//   1. each rank quantizes its padded unit gradient as one segment per rank of its shard group
//      (that rank's shard; kernels/quantize.hpp, zero.quantize_block elements per fp32 scale);
//   2. an all-to-all of the segments within the group;
//   3. each rank dequantizes the group's contributions to its shard and sums them in fp32, in rank
//      order, into its shard (where the plain reduce-scatter leaves the group's sum);
//   4. under hybrid sharding, once the shard holds the group's sum (after the last micro-step), it
//      is requantized and exchanged across the groups: under hpZ, where each replica owns one
//      sub-shard, as an all-to-all of one segment per sub-shard; otherwise, where every replica
//      needs the whole shard, as an all-gather of the shard's one segment;
//   5. each replica dequantizes and sums those segments, in replica order, into its sub-shard (or
//      its whole shard: every replica sums the same segments, so the replicas stay identical).
// With one group the first three steps are all. Every sum has a fixed order, no atomics: a run
// repeats bit for bit. Stochastic rounding (zero.grad_rounding) draws from (train.seed, the
// rank, the count of quantizations so far, the element), so it repeats too.
//
// A shard group that spans N > 1 nodes with k > 1 of its ranks on each (hops_by_node,
// cross_node.hpp) takes steps 2-3 in two hops by node (ZeRO++'s hierarchical all-to-all),
// over the group's splits by node (split_group_by_node, cross_node.hpp):
//   2a. an all-to-all within the node: to the local peer of index j go the N segments of the
//       group's ranks of local index j on every node (node by node);
//   2b. each rank dequantizes and sums, per node n, the k contributions of its node to the shard
//       of node n's rank of its own local index (local order, fp32), and requantizes those N
//       sums as N segments;
//   2c. an all-to-all across the nodes, among the group's ranks of equal local index: segment n
//       to node n's;
//   3.  each rank dequantizes and sums the N segments, in node order, into its shard.
// Each rank then sends (N-1)/N * S / k out of its node (S its quantized contribution) instead of
// the flat exchange's (G-k)/G * S (G = N k). With one node, k = 1 or an uneven span the group
// keeps the one flat exchange: nothing to save, nothing to gain, or no peer of equal local index on
// some node (hops_by_node says why). The exchange across the groups (steps 4-5) is the same
// either way. Step 1's segments are the same too, only in another order (their draws are keyed by
// destination); the N sums of 2b are kept in the contribution (scratch by then), so the scratch
// buffers of the flat exchange cover both hops (G segments sent and received in 2a, N in 2c).
//
// Error feedback (zero.error_feedback): each rank keeps, per unit, what the quantization of its
// own contribution (step 1) lost, and adds it to that unit's next contribution before quantizing.
// The requantizations of steps 2b and 4 quantize sums of several ranks' contributions, not one
// rank's gradient: as in ZeRO++, they keep no residual.
//
// The collectives are blocking: the dequantize-and-sum needs their data, and one pair of scratch
// buffers serves every unit.
#pragma once

#include <cstdint>
#include <vector>

#include "comm/communicator.hpp"
#include "core/memory.hpp"
#include "core/zero_mesh.hpp"
#include "modules/zeropp/options.hpp"
#include "modules/zeropp/quantize.hpp"
#include "zero/collective_strategy.hpp"
#include "zero/partition.hpp"
#include "zero/schedule.hpp"

namespace zm {

// The packed segment of `values` gradient elements under the options' qgZ settings.
kernels::QuantizedSegment grad_segment(const ZeroppOptions& options, int64_t values);

// The buffers qgZ allocates beside a gradient path (none under "none"): the send and receive
// scratch of the largest unit at either level, and the residuals under error feedback.
std::vector<BufferSpec> quantized_gradient_buffers(const Partition& partition,
                                                   const ZeroppOptions& options,
                                                   const ZeroMesh& mesh);

// For the planner: unit u's exchange within its shard group (`group` ranks spanning `span`: one
// all-to-all, or where hops_by_node the one within the node and the one across the nodes) and
// across the groups (`replicas` ranks; under hpZ an all-to-all, else an all-gather), as bytes,
// with their passes.
PlannedCollectives grad_exchange_in_group(const ZeroppOptions& options, const UnitPartition& unit,
                                          int group, NodeSpan span, CommLevel level);
PlannedCollective grad_exchange_across(const ZeroppOptions& options, const UnitPartition& unit,
                                       int replicas, bool hpz, CommLevel level);

class QuantizedGradients {
 public:
  // Takes quantized_gradient_buffers from `alloc`. `world_rank` keys the stochastic draws.
  QuantizedGradients(const Partition& partition, const ZeroppOptions& options,
                     PlannedAllocator& alloc, int world_rank);

  // Each exchange posts the hops of its schedule entry `c` (a GroupReduction or
  // ReplicaReduction of c.unit) through post_hop, which checks them against their wire records.
  //
  // Steps 1-3 in the shard group (c's one hop): x (the padded unit, T the reduce type) holds this
  // rank's contribution, one shard per group rank in rank order; out (one shard, possibly inside
  // x) receives the group's sum of this rank's shard. x is scratch afterwards.
  template <typename T>
  void reduce_in_group(const ScheduledCollective& c, const MeshComms& comms, T* x, T* out,
                       kernels::TeamShape shape);
  // The same in two hops by node (c's two hops): over the group's ranks on this node (ranked by
  // local index), then its ranks of this rank's local index (ranked by node).
  template <typename T>
  void reduce_in_group_by_node(const ScheduledCollective& c, const MeshComms& comms, T* x, T* out,
                               kernels::TeamShape shape);

  // Steps 4-5 (c's one hop, across the replicas): shard (the group's sum of this rank's shard)
  // becomes the sum over the replicas, in place; with secondary shards (an all-to-all of
  // sub-shard segments) only this replica's sub-shard is written.
  template <typename T>
  void reduce_across(const ScheduledCollective& c, const MeshComms& comms, T* shard,
                     kernels::TeamShape shape);

 private:
  // `pieces` consecutive pieces of `piece` values of x, each as one segment, into send_: in piece
  // order, or with `per_node` > 1 peer by peer for the hop within a node (send_slot).
  template <typename T>
  void quantize(kernels::TeamShape shape, const T* x, int64_t pieces, int64_t piece,
                int64_t per_node = 1);
  // Step 1 on x, with error feedback: `ranks` segments of the unit's shard, as quantize places
  // them.
  template <typename T>
  void quantize_contribution(kernels::TeamShape shape, int unit, T* x, int64_t ranks,
                             int64_t per_node);
  template <typename T>
  T* residual(int unit);

  const Partition* partition_;
  kernels::QuantizedSegment layout_;  // block and bits; values set per call
  bool stochastic_;
  bool feedback_;
  uint64_t seed_;
  uint64_t quantizations_ = 0;  // so far on this rank: each one draws from its own key
  TrackedBuffer<uint8_t> send_, recv_;
  TrackedBuffer<float> residual_f32_;  // error feedback, fp32 reductions
#if ZEROMINI_HAVE_BF16
  TrackedBuffer<bf16> residual_bf16_;  // error feedback, bf16 reductions
#endif
};

}  // namespace zm
