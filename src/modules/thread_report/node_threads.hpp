// How the ranks of one node share its cores: their threads against the CPUs they may run on.
#pragma once

#include <mpi.h>

#include <string>

#include "modules/thread_report/host_threads.hpp"

namespace zm {

struct NodeThreads {
  int nodes = 1;                 // nodes of the job (shared-memory domains)
  int ranks = 1;                 // ranks on this rank's node
  int threads = 1;               // Kokkos host threads of those ranks, summed
  int cores = 1;                 // CPUs in the union of their affinity masks
  int oversubscribed_nodes = 0;  // nodes (of the whole job) with more threads than cores
};

// Collective over `comm`.
NodeThreads node_threads(MPI_Comm comm, const HostThreads& mine);

struct ThreadPlacement {
  HostThreads rank;  // this rank's pools and cores
  NodeThreads node;  // its node, and the job's nodes
};

// Collective over `comm`.
ThreadPlacement thread_placement(MPI_Comm comm);

// The start-up lines of a run: the pools of a rank and the placement on its node, with a
// warning when threads exceed cores (rank 0's is the one printed).
std::string thread_report(const ThreadPlacement& placement);

}  // namespace zm
