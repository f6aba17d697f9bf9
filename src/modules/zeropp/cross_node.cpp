#include "modules/zeropp/cross_node.hpp"

#include <cmath>
#include <iterator>
#include <map>

#include "comm/collective_observer.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "plan/run_declarations.hpp"
#include "plan/run_extensions.hpp"
#include "zero/partition.hpp"

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

NodeSpan shard_group_span(const ZeroMesh& mesh) {
  return node_span(mesh.group_ranks(), stride_along(mesh.mesh, mesh.mesh.index_of(kShardDim)),
                   mesh.ranks_per_node);
}

NodeSpan placed_span(const MeshComms& comms, Communicator& comm) {
  const int world_rank = comms.world().rank();
  std::vector<int> ranks(static_cast<size_t>(comm.size()));
  MPI_Allgather(&world_rank, 1, MPI_INT, ranks.data(), 1, MPI_INT, comm.mpi_comm());
  return node_span(ranks, comms.mesh().ranks_per_node);
}

bool hops_by_node(NodeSpan group_span) {
  return group_span.nodes > 1 && group_span.per_node > 1;
}

const char* const kShardWithinNode = "shard_within_node";
const char* const kShardAcrossNodes = "shard_across_nodes";

void split_group_by_node(MeshComms& comms) {
  Communicator& shard_group = comms.group();
  const NodeSpan span = placed_span(comms, shard_group);
  if (!hops_by_node(span)) return;
  const int rank = shard_group.rank(), k = span.per_node;
  const CommLevel level = level_along(comms.mesh(), kShardDim);
  comms.add_split(kShardWithinNode, shard_group, rank / k, rank, level);
  comms.add_split(kShardAcrossNodes, shard_group, rank % k, rank, level);
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

// What one communicator's collectives sent out of the node: a count of their posts.
class CrossNodeCounters::Counter final : public CollectiveObserver {
 public:
  Counter(Communicator& comm, NodeSpan span) : comm_(comm), span_(span) { comm.observe(this); }
  ~Counter() override { comm_.unobserve(this); }
  bool follows() const override { return false; }
  void posted(const PostedCollective& c) override {
    const double leaving = cross_node_bytes(c.op, c.whole_buffer_bytes, comm_.size(), span_);
    if (leaving == 0.0) return;  // NaN is counted: a communicator spread unevenly has no figure
    stats[c.op].calls += 1;
    stats[c.op].bytes += leaving;
  }
  CommStats stats;

 private:
  Communicator& comm_;
  NodeSpan span_;
};

CrossNodeCounters::CrossNodeCounters(MeshComms& comms) {
  for (const MeshComms::Member& m : comms.members())
    counters_.push_back(std::make_unique<Counter>(*m.comm, placed_span(comms, *m.comm)));
}

CrossNodeCounters::~CrossNodeCounters() = default;

CommStats CrossNodeCounters::stats() const {
  CommStats total;
  for (const auto& counter : counters_) total += counter->stats;
  return total;
}

namespace {

const char* comm_level_name(CommLevel level) {
  static const char* const kNames[] = {"intra_group", "inter_group", "model_parallel"};
  static_assert(std::size(kNames) == kCommLevels);
  return enum_name(kNames, level);
}

// The index of the mesh dimension a level's collectives run along (comm/mesh_comms.hpp), or -1
// (the model's level in a mesh without model dimensions).
int dim_of(const ZeroMesh& mesh, CommLevel level) {
  if (level == CommLevel::ModelParallel) return mesh.model_dim();
  return mesh.mesh.index_of(level == CommLevel::IntraGroup ? kShardDim : kReplicateDim);
}

}  // namespace

std::array<double, kCommOps> plan_cross_node_traffic(const Deck& deck, int stage,
                                                     const ZeroMesh& mesh) {
  // The nodes spanned by each communicator a declared collective can run on (comm/mesh_comms.hpp):
  // the model dimension's, the shard group's and the replicas' (rank 0's group along each; the
  // others span theirs alike), and the world's.
  const DeviceMesh& m = mesh.mesh;
  std::array<NodeSpan, kCommLevels> level_spans;
  for (int l = 0; l < kCommLevels; ++l) {
    const int d = dim_of(mesh, static_cast<CommLevel>(l));
    if (d >= 0)
      level_spans[static_cast<size_t>(l)] =
          node_span(m.dim(d).size, stride_along(m, d), mesh.ranks_per_node);
  }
  const NodeSpan world_span = node_span(mesh.world(), 1, mesh.ranks_per_node);
  std::array<double, kCommOps> bytes{};
  const ParamLayout layout = run_layout(deck, stage);
  const Partition partition(layout, mesh.group_ranks(), mesh.sub_shards());
  for (const auto& c : run_traffic(deck, stage, partition, mesh)) {
    // A collective of every rank runs on the world's (the step statistics), or on a dimension
    // that spans it: the same ranks either way. One that declares its span (an exchange in hops by
    // node) runs on a split of its level's group.
    const bool world = c.ranks == mesh.world();
    ZM_ASSERT(
        c.span || world ||
            (dim_of(mesh, c.level) >= 0 && c.ranks == mesh.mesh.dim(dim_of(mesh, c.level)).size),
        "a collective of {} ranks at level {}", c.ranks, comm_level_name(c.level));
    const NodeSpan span = c.span  ? *c.span
                          : world ? world_span
                                  : level_spans[static_cast<size_t>(c.level)];
    bytes[static_cast<size_t>(c.op)] +=
        cross_node_bytes(c.op, static_cast<double>(c.count * c.element_bytes), c.ranks, span);
  }
  return bytes;
}

}  // namespace zm
