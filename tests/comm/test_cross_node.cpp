// The bytes that leave a node (comm/cross_node.hpp): the nodes a communicator spans, the ranks
// along a mesh dimension, and the formula per collective against values worked by hand and the
// total a node-aware algorithm must move between nodes.
#include <gtest/gtest.h>

#include <stdexcept>

#include "comm/cross_node.hpp"
#include "core/zero_mesh.hpp"

namespace {

using zm::CommOp;
using zm::NodeSpan;

TEST(CrossNode, SpanCountsNodesAndRanksPerNode) {
  const auto span = [](std::vector<int> ranks, int per_node) {
    const NodeSpan s = zm::node_span(ranks, per_node);
    return std::make_pair(s.nodes, s.per_node);
  };
  EXPECT_EQ(span({0, 1, 2, 3}, 2), std::make_pair(2, 2));
  EXPECT_EQ(span({0, 2}, 2), std::make_pair(2, 1));  // one rank of each node
  EXPECT_EQ(span({2, 3}, 2), std::make_pair(1, 2));  // within the second node
  EXPECT_EQ(span({0, 1, 2, 3}, 0), std::make_pair(1, 4));
  EXPECT_EQ(span({0, 1, 2, 3}, 8), std::make_pair(1, 4));
  EXPECT_EQ(span({1, 5, 9}, 4), std::make_pair(3, 1));
  EXPECT_THROW(zm::node_span({0, 1, 2}, 2), std::logic_error);  // 2 + 1: uneven
}

TEST(CrossNode, RanksAlongMeshDimensions) {
  const zm::ZeroMesh mesh = zm::hybrid_mesh(4, 2, false, 2);  // replicate 2 x shard 2 x tp 2
  const zm::DeviceMesh& m = mesh.mesh;
  EXPECT_EQ(zm::ranks_along(m, m.index_of(zm::kTpDim), 5), (std::vector<int>{4, 5}));
  EXPECT_EQ(zm::ranks_along(m, m.index_of(zm::kShardDim), 5), (std::vector<int>{5, 7}));
  EXPECT_EQ(zm::ranks_along(m, m.index_of(zm::kReplicateDim), 5), (std::vector<int>{1, 5}));
}

TEST(CrossNode, BytesPerCollective) {
  const NodeSpan two_of_two{2, 2};  // 4 ranks, 2 per node
  EXPECT_DOUBLE_EQ(zm::cross_node_bytes(CommOp::AllGather, 1024, 4, two_of_two), 256);
  EXPECT_DOUBLE_EQ(zm::cross_node_bytes(CommOp::ReduceScatter, 1024, 4, two_of_two), 256);
  EXPECT_DOUBLE_EQ(zm::cross_node_bytes(CommOp::AllReduce, 1024, 4, two_of_two), 512);
  EXPECT_DOUBLE_EQ(zm::cross_node_bytes(CommOp::Broadcast, 1024, 4, two_of_two), 256);
  EXPECT_DOUBLE_EQ(zm::cross_node_bytes(CommOp::AllToAll, 1024, 4, two_of_two), 512);
  EXPECT_DOUBLE_EQ(zm::cross_node_bytes(CommOp::Barrier, 1024, 4, two_of_two), 0);
  // One rank per node: the ring's own bytes for gathers and exchanges.
  EXPECT_DOUBLE_EQ(zm::cross_node_bytes(CommOp::AllGather, 1024, 2, {2, 1}),
                   zm::ring_bytes(CommOp::AllGather, 1024, 2));
  EXPECT_DOUBLE_EQ(zm::cross_node_bytes(CommOp::AllToAll, 1024, 2, {2, 1}),
                   zm::ring_bytes(CommOp::AllToAll, 1024, 2));
  EXPECT_DOUBLE_EQ(zm::cross_node_bytes(CommOp::AllGather, 800, 8, {4, 2}), 300);  // 3/4 x 400
  for (int op = 0; op < zm::kCommOps; ++op)  // one node: nothing leaves it
    EXPECT_EQ(zm::cross_node_bytes(CommOp(op), 1024, 4, {1, 4}), 0.0);
}

// Over all N ranks, an all-gather's bytes out of nodes are what the nodes must take in: every
// node the other nodes' part of the output, (nodes - 1) / nodes x S.
TEST(CrossNode, RanksTogetherSendWhatTheNodesNeed) {
  for (const NodeSpan span : {NodeSpan{2, 2}, NodeSpan{4, 2}, NodeSpan{3, 8}, NodeSpan{16, 1}}) {
    const int ranks = span.nodes * span.per_node;
    const double whole = 6000;
    const double nodes_need = span.nodes * (span.nodes - 1.0) / span.nodes * whole;
    EXPECT_DOUBLE_EQ(ranks * zm::cross_node_bytes(CommOp::AllGather, whole, ranks, span),
                     nodes_need);
    // All-to-all: every rank's blocks for the (nodes - 1) k ranks elsewhere.
    EXPECT_DOUBLE_EQ(zm::cross_node_bytes(CommOp::AllToAll, whole, ranks, span),
                     whole / ranks * (span.nodes - 1) * span.per_node);
  }
}

}  // namespace
