// Bytes that leave a node: ZeRO++'s measure of communication volume (3M -> 0.75M), which counts
// what crosses the network between nodes, not what a ring moves in all; and the split of the shard
// group by node for qgZ's exchange in two hops (quantized_gradients.hpp).
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

#include <array>
#include <memory>
#include <vector>

#include "comm/mesh_comms.hpp"
#include "core/deck.hpp"
#include "core/device_mesh.hpp"
#include "core/zero_mesh.hpp"

namespace zm {

// The span of a communicator over `world_ranks` (its members' ranks in the world).
// ranks_per_node <= 0: every rank on one node.
NodeSpan node_span(const std::vector<int>& world_ranks, int ranks_per_node);
// The same for the `count` ranks 0, stride, 2 stride, ... (rank 0's group along a mesh
// dimension: stride = the product of the inner dimensions' sizes), without listing them.
NodeSpan node_span(int count, int stride, int ranks_per_node);
// The stride between the ranks of a group along dimension d of `mesh`.
int stride_along(const DeviceMesh& mesh, int d);
// The nodes rank 0's shard group spans, by the mesh's arithmetic (the planner's).
NodeSpan shard_group_span(const ZeroMesh& mesh);
// Collective over `comm`, a member of `comms`: the nodes its ranks span as the run placed them
// (their world ranks, gathered), not as the mesh arithmetic says.
NodeSpan placed_span(const MeshComms& comms, Communicator& comm);

// Whether an exchange within a shard group of this span takes two hops by node (a hierarchical
// all-to-all): the group spans 2+ nodes with the same k >= 2 of its ranks on each. On one node
// nothing crosses; with k = 1 the hop within the node moves nothing and the hop across is the flat
// exchange; spread unevenly, the ranks of equal local index on each node are not one per node, so
// the hop across them would not reach every destination.
bool hops_by_node(NodeSpan group_span);

// The shard group's splits by node (MeshComms::added): its ranks on this rank's node, and its
// ranks of this rank's local index on every node (one per node, ranked by node). Both are
// intra-group. A node is ranks_per_node consecutive world ranks and the group's ranks keep the
// world's order, so group rank r sits on the group's node r / k with local index r % k.
extern const char* const kShardWithinNode;   // "shard_within_node"
extern const char* const kShardAcrossNodes;  // "shard_across_nodes"
// Collective over the shard group: adds both splits where the group's span hops_by_node.
void split_group_by_node(MeshComms& comms);

// Bytes this rank's collective sends out of its node (the table above); NaN for an uneven span.
double cross_node_bytes(CommOp op, double whole_buffer_bytes, int ranks, NodeSpan span);

// Counts what this rank's collectives on every member of `comms` sent out of its node, from now
// until it is destroyed (observing each member: comm/collective_observer.hpp). Collective over
// each member (their spans). `comms` must outlive it.
class CrossNodeCounters {
 public:
  explicit CrossNodeCounters(MeshComms& comms);
  ~CrossNodeCounters();
  CrossNodeCounters(const CrossNodeCounters&) = delete;
  CrossNodeCounters& operator=(const CrossNodeCounters&) = delete;
  // Bytes only, with the calls that sent any (NaN bytes: some communicator spread unevenly).
  CommStats stats() const;

 private:
  class Counter;
  std::vector<std::unique_ptr<Counter>> counters_;
};

// The planner's: bytes per rank and step by collective that leave the rank's node, each collective
// on the nodes its communicator spans, as the run counts them.
std::array<double, kCommOps> plan_cross_node_traffic(const Deck& deck, int stage,
                                                     const ZeroMesh& mesh);

}  // namespace zm
