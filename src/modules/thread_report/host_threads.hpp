// The thread pools of this process and the cores they may run on: Kokkos' host execution space
// and the BLAS library that Kokkos Kernels' host GEMMs call. Hybrid MPI + OpenMP runs pay off
// only when both pools are the same one (an OpenMP BLAS) and fit the cores.
#pragma once

#include <string>
#include <vector>

namespace zm {

struct BlasThreads {
  std::string library = "unknown";    // e.g. "OpenBLAS 0.3.21" (from the library itself)
  std::string threading = "unknown";  // "OpenMP", "pthreads", "sequential" or "unknown"
  int threads = 0;                    // 0 when the library does not say
};

struct HostThreads {
  std::string kokkos_space;  // the default host execution space, e.g. "OpenMP" or "Serial"
  int kokkos_threads = 1;    // its concurrency
  BlasThreads blas;
  std::vector<int> cpus;  // the CPUs its threads may run on (union of their affinity masks)
};

// Read once Kokkos is initialised.
HostThreads host_threads();

// "Kokkos OpenMP 2 threads, BLAS OpenBLAS 0.3.21 (OpenMP) 2 threads, 2 cores visible"
std::string describe(const HostThreads& threads);

// A problem with this process's own pools, or "" (e.g. a pthreads BLAS beside OpenMP threads).
std::string thread_pool_conflict(const HostThreads& threads);

}  // namespace zm
