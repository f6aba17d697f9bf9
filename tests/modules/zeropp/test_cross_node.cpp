// The bytes that leave a node (modules/zeropp/cross_node.hpp): the nodes a communicator spans, the
// ranks along a mesh dimension, and the formula per collective against values worked by hand and
// the total a node-aware algorithm must move between nodes.
#include <gtest/gtest.h>

#include <cmath>

#include "core/zero_mesh.hpp"
#include "modules/zeropp/cross_node.hpp"

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
  EXPECT_EQ(span({0, 1, 2}, 2), std::make_pair(2, 0));  // 2 + 1: uneven
}

// Without listing the ranks: rank 0's group along a dimension, as the planner spans them, agrees
// with the list, on a 3 x 4 x 2 mesh and nodes of every size up to the world.
TEST(CrossNode, SpanOfAMeshDimensionAsTheList) {
  // replicate 3 x shard 4 x a model dimension of 2
  const zm::ZeroMesh mesh = zm::hybrid_mesh(12, 4, false, {{"model", 2}});
  const zm::DeviceMesh& m = mesh.mesh;
  for (int per_node = 1; per_node <= m.world() + 1; ++per_node)
    for (int d = 0; d < m.ndims(); ++d) {
      std::vector<int> ranks;
      for (int i = 0; i < m.dim(d).size; ++i) ranks.push_back(i * zm::stride_along(m, d));
      const NodeSpan listed = zm::node_span(ranks, per_node);
      const NodeSpan strided = zm::node_span(m.dim(d).size, zm::stride_along(m, d), per_node);
      EXPECT_EQ(std::make_pair(strided.nodes, strided.per_node),
                std::make_pair(listed.nodes, listed.per_node))
          << m.dim(d).name << ", " << per_node << " ranks per node";
    }
  EXPECT_EQ(zm::stride_along(m, m.index_of(zm::kReplicateDim)), 8);
  EXPECT_EQ(zm::node_span(3, 8, 12).per_node, 0);   // 0, 8 | 16: two on node 0, one on node 1
  EXPECT_EQ(zm::node_span(24, 1, 16).per_node, 0);  // 16 + 8
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
  EXPECT_TRUE(std::isnan(zm::cross_node_bytes(CommOp::AllGather, 1024, 3, {2, 0})));  // uneven
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
