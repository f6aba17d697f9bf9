// Bytes that leave a node: the measure of communication volume of hierarchical schemes (3M ->
// 0.75M), which counts what crosses the network between nodes, not what a ring moves in all.
//
// Nodes: world rank r sits on node r / ranks_per_node (the run's: zero.ranks_per_node when set,
// else MPI's shared-memory split; the planner's: the same key, else the machine's devices per
// node). A communicator spans `nodes` distinct nodes with `per_node` (k) of its ranks in each.
// The formulas assume the same k on every node; a communicator spread unevenly (8 ranks on nodes
// of 6) has no figure: NaN, which the reports print as such, rather than a stopped run.
//
// Per rank and collective, under a node-aware algorithm (the least any algorithm sends out of a
// node, the convention of hierarchical volume counts), S the whole buffer as in ring_bytes and N
// the communicator's ranks:
//   all_gather, reduce_scatter  (nodes-1)/nodes * S / k   each node takes in (or sends out) the
//                                                          other nodes' part once, k ranks share it
//   all_reduce                2 (nodes-1)/nodes * S / k   a reduce-scatter and an all-gather
//   broadcast                   (nodes-1)/nodes * S / k   every other node takes in S once
//   all_to_all                  (N-k)/N * S               this rank's blocks for other nodes
//   barrier                     0
// and 0 on one node.
#pragma once

#include <vector>

#include "comm/communicator.hpp"
#include "core/device_mesh.hpp"

namespace zm {

// The span (NodeSpan, comm/communicator.hpp) of a communicator over `world_ranks` (its members'
// ranks in the world). ranks_per_node <= 0: every rank on one node.
NodeSpan node_span(const std::vector<int>& world_ranks, int ranks_per_node);
// The same for the `count` ranks 0, stride, 2 stride, ... (rank 0's group along a mesh
// dimension: stride = the product of the inner dimensions' sizes), without listing them.
NodeSpan node_span(int count, int stride, int ranks_per_node);
// The stride between the ranks of a group along dimension d of `mesh`.
int stride_along(const DeviceMesh& mesh, int d);

// Whether an exchange within a shard group of this span takes two hops by node (a hierarchical
// all-to-all): the group spans 2+ nodes with the same k >= 2 of its ranks on each. On one node
// nothing crosses; with k = 1 the hop within the node moves nothing and the hop across is the flat
// exchange; spread unevenly, the ranks of equal local index on each node are not one per node, so
// the hop across them would not reach every destination.
bool hops_by_node(NodeSpan group_span);

// Bytes this rank's collective sends out of its node (the table above); NaN for an uneven span.
double cross_node_bytes(CommOp op, double whole_buffer_bytes, int ranks, NodeSpan span);

}  // namespace zm
