// How the ranks of one node share its cores: their threads against the CPUs they may run on.
#pragma once

#include <mpi.h>

#include <string>

#include "core/host_threads.hpp"

namespace zm {

struct NodeThreads {
  int ranks = 1;                 // ranks on this rank's node
  int threads = 1;               // Kokkos host threads of those ranks, summed
  int cores = 1;                 // CPUs in the union of their affinity masks
  int oversubscribed_nodes = 0;  // nodes (of the whole job) with more threads than cores
};

// Collective over `comm`.
NodeThreads node_threads(MPI_Comm comm, const HostThreads& mine);

// The start-up lines of a run: the pools of a rank and the placement on its node, with a
// warning when threads exceed cores. Collective; only rank 0's text is meaningful.
std::string thread_report(MPI_Comm comm);

}  // namespace zm
