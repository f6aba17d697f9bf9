#include "comm/cross_node.hpp"

#include <cmath>
#include <map>

#include "core/error.hpp"

namespace zm {

namespace {
// Counts of ranks per node, in any order: the span, with k = 0 where they differ.
template <typename Counts>
NodeSpan span_of_counts(const Counts& ranks_on_node) {
  const int per_node = ranks_on_node.begin()->second;
  for (const auto& node : ranks_on_node)
    if (node.second != per_node) return {static_cast<int>(ranks_on_node.size()), 0};
  return {static_cast<int>(ranks_on_node.size()), per_node};
}
}  // namespace

NodeSpan node_span(const std::vector<int>& world_ranks, int ranks_per_node) {
  ZM_ASSERT(!world_ranks.empty(), "a communicator of no ranks");
  if (ranks_per_node <= 0) return {1, static_cast<int>(world_ranks.size())};
  std::map<int, int> ranks_on_node;
  for (int r : world_ranks) ++ranks_on_node[r / ranks_per_node];
  return span_of_counts(ranks_on_node);
}

NodeSpan node_span(int count, int stride, int ranks_per_node) {
  ZM_ASSERT(count >= 1 && stride >= 1, "{} ranks {} apart", count, stride);
  if (ranks_per_node <= 0) return {1, count};
  // The ranks increase, so each node's are one run: compare each run's length with the last's.
  int nodes = 1, last_run = -1, run = 0;
  int64_t node = 0;
  bool even = true;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t here = i * stride / ranks_per_node;
    if (i > 0 && here != node) {
      even = even && (last_run < 0 || run == last_run);
      last_run = run;
      run = 0;
      ++nodes;
    }
    node = here;
    ++run;
  }
  even = even && (last_run < 0 || run == last_run);
  return {nodes, even ? run : 0};
}

int stride_along(const DeviceMesh& mesh, int d) {
  int stride = 1;
  for (int inner = mesh.ndims() - 1; inner > d; --inner) stride *= mesh.dim(inner).size;
  return stride;
}

bool hops_by_node(NodeSpan group_span) {
  return group_span.nodes > 1 && group_span.per_node > 1;
}

double cross_node_bytes(CommOp op, double whole_buffer_bytes, int ranks, NodeSpan span) {
  if (span.nodes <= 1 || op == CommOp::Barrier) return 0.0;
  if (span.per_node <= 0) return NAN;  // uneven: no figure
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
