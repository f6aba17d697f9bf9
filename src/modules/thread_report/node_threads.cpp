#include "modules/thread_report/node_threads.hpp"

#include <sched.h>

#include <fmt/format.h>

#include <array>
#include <bitset>
#include <cstdint>

#include "comm/node_split.hpp"

namespace zm {

namespace {

constexpr int kMaskWords = CPU_SETSIZE / 64;

// A rank's CPUs as a bit mask that MPI can OR across the node.
std::array<uint64_t, kMaskWords> cpu_mask(const std::vector<int>& cpus) {
  std::array<uint64_t, kMaskWords> mask{};
  for (int cpu : cpus) mask[static_cast<size_t>(cpu / 64)] |= uint64_t{1} << (cpu % 64);
  return mask;
}

int count_bits(const std::array<uint64_t, kMaskWords>& mask) {
  int bits = 0;
  for (uint64_t word : mask) bits += static_cast<int>(std::bitset<64>(word).count());
  return bits;
}

}  // namespace

NodeThreads node_threads(MPI_Comm comm, const HostThreads& mine) {
  const NodeComm node(comm);
  NodeThreads t;
  t.ranks = node.size();
  MPI_Allreduce(&mine.kokkos_threads, &t.threads, 1, MPI_INT, MPI_SUM, node.get());
  const std::array<uint64_t, kMaskWords> my_mask = cpu_mask(mine.cpus);
  std::array<uint64_t, kMaskWords> node_mask{};
  MPI_Allreduce(my_mask.data(), node_mask.data(), kMaskWords, MPI_UINT64_T, MPI_BOR, node.get());
  t.cores = count_bits(node_mask);
  // Per node, counted once by its first rank: [nodes, oversubscribed nodes].
  const int leader = node.rank() == 0 ? 1 : 0;
  const int mine_counts[2] = {leader, leader && t.threads > t.cores ? 1 : 0};
  int counts[2] = {0, 0};
  MPI_Allreduce(mine_counts, counts, 2, MPI_INT, MPI_SUM, comm);
  t.nodes = counts[0];
  t.oversubscribed_nodes = counts[1];
  return t;
}

ThreadPlacement thread_placement(MPI_Comm comm) {
  ThreadPlacement placement;
  placement.rank = host_threads();
  placement.node = node_threads(comm, placement.rank);
  return placement;
}

std::string thread_report(const ThreadPlacement& placement) {
  const HostThreads& mine = placement.rank;
  const NodeThreads& node = placement.node;
  const auto count = [](int n, const char* what) {
    return fmt::format("{} {}{}", n, what, n == 1 ? "" : "s");
  };
  std::string text = fmt::format(
      "threads: {}; node: {} x {} on {}\n", describe(mine), count(node.ranks, "rank"),
      count(node.ranks > 0 ? node.threads / node.ranks : 0, "thread"), count(node.cores, "core"));
  if (node.oversubscribed_nodes > 0) {
    const bool here = node.threads > node.cores;
    const std::string where =
        here
            ? fmt::format("{} on {} on this node{}", count(node.threads, "thread"),
                          count(node.cores, "core"),
                          node.oversubscribed_nodes > 1
                              ? fmt::format(", {} in all", count(node.oversubscribed_nodes, "node"))
                              : "")
            : fmt::format("on {}", count(node.oversubscribed_nodes, "node"));
    text += fmt::format(
        "warning: ranks per node x threads per rank exceed the cores they can use ({}): the "
        "ranks will compete for cores. Lower OMP_NUM_THREADS or the ranks per node (Slurm: "
        "--cpus-per-task and OMP_NUM_THREADS=$SLURM_CPUS_PER_TASK); where sharing cores is "
        "intended, OMP_WAIT_POLICY=passive keeps idle threads from spinning through the busy "
        "ones' time\n",
        where);
  }
  const std::string conflict = thread_pool_conflict(mine);
  if (!conflict.empty()) text += "warning: " + conflict + "\n";
  return text;
}

}  // namespace zm
