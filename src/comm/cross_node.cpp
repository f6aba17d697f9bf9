#include "comm/cross_node.hpp"

#include <map>

#include "core/error.hpp"

namespace zm {

NodeSpan node_span(const std::vector<int>& world_ranks, int ranks_per_node) {
  ZM_ASSERT(!world_ranks.empty(), "a communicator of no ranks");
  if (ranks_per_node <= 0) return {1, static_cast<int>(world_ranks.size())};
  std::map<int, int> ranks_on_node;
  for (int r : world_ranks) ++ranks_on_node[r / ranks_per_node];
  const int per_node = ranks_on_node.begin()->second;
  for (const auto& node : ranks_on_node)
    ZM_ASSERT(node.second == per_node,
              "a communicator of {} ranks spread unevenly over nodes of {} ranks ({} on node {}, "
              "{} on node {}): cross-node bytes assume the same ranks on every node",
              world_ranks.size(), ranks_per_node, per_node, ranks_on_node.begin()->first,
              node.second, node.first);
  return {static_cast<int>(ranks_on_node.size()), per_node};
}

std::vector<int> ranks_along(const DeviceMesh& mesh, int d, int rank) {
  std::vector<int> coordinates(static_cast<size_t>(mesh.ndims()));
  for (int i = 0; i < mesh.ndims(); ++i)
    coordinates[static_cast<size_t>(i)] = mesh.coordinate(rank, i);
  std::vector<int> ranks;
  for (int c = 0; c < mesh.dim(d).size; ++c) {
    coordinates[static_cast<size_t>(d)] = c;
    ranks.push_back(mesh.rank_at(coordinates));
  }
  return ranks;
}

double cross_node_bytes(CommOp op, double whole_buffer_bytes, int ranks, NodeSpan span) {
  if (span.nodes <= 1) return 0.0;
  const double nodes = span.nodes, k = span.per_node, n = ranks;
  const double leaving = (nodes - 1.0) / nodes * whole_buffer_bytes / k;
  switch (op) {
    case CommOp::AllReduce:
      return 2.0 * leaving;
    case CommOp::ReduceScatter:
    case CommOp::AllGather:
    case CommOp::Broadcast:
      return leaving;
    case CommOp::AllToAll:
      return (n - k) / n * whole_buffer_bytes;
    case CommOp::Barrier:
    case CommOp::Count:
      break;
  }
  return 0.0;
}

}  // namespace zm
