#include "modules/thread_report/host_threads.hpp"

#include <dlfcn.h>
#include <sched.h>

#include <fmt/format.h>

#include "core/compat.hpp"

namespace zm {

namespace {

// The BLAS is whatever the dynamic linker loaded for Kokkos Kernels; OpenBLAS says what it is
// through functions of its own. They are looked up rather than linked so that any BLAS works.
template <typename Function>
Function blas_function(const char* name) {
  return reinterpret_cast<Function>(dlsym(RTLD_DEFAULT, name));
}

BlasThreads blas_threads() {
  BlasThreads blas;
  const auto config = blas_function<const char* (*)()>("openblas_get_config");
  const auto threads = blas_function<int (*)()>("openblas_get_num_threads");
  const auto parallel = blas_function<int (*)()>("openblas_get_parallel");
  if (!config || !threads || !parallel) return blas;
  // "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64": name and version.
  const std::string text = config();
  const size_t second_space = text.find(' ', text.find(' ') + 1);
  blas.library = text.substr(0, second_space);
  blas.threads = threads();
  switch (parallel()) {
    case 0:
      blas.threading = "sequential";
      break;
    case 1:
      blas.threading = "pthreads";
      break;
    case 2:
      blas.threading = "OpenMP";
      break;
    default:
      break;
  }
  return blas;
}

// The CPUs the calling thread may run on, added to `set`.
void add_affinity(cpu_set_t& set) {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof(mine), &mine) == 0) CPU_OR(&set, &set, &mine);
}

// The union over Kokkos' host threads: with OMP_PROC_BIND each thread is pinned to its own
// place, so the main thread's mask alone would say one core.
std::vector<int> affinity_cpus() {
  cpu_set_t all;
  CPU_ZERO(&all);
#if defined(KOKKOS_ENABLE_OPENMP)
#pragma omp parallel num_threads(Kokkos::OpenMP().concurrency())
  {
    cpu_set_t mine;
    CPU_ZERO(&mine);
    add_affinity(mine);
#pragma omp critical(zeromini_affinity)
    CPU_OR(&all, &all, &mine);
  }
#else
  add_affinity(all);
#endif
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &all)) cpus.push_back(cpu);
  return cpus;
}

}  // namespace

HostThreads host_threads() {
  using Host = Kokkos::DefaultHostExecutionSpace;
  HostThreads t;
  t.kokkos_space = Host::name();
  t.kokkos_threads = Host().concurrency();
  t.blas = blas_threads();
  t.cpus = affinity_cpus();
  return t;
}

std::string describe(const HostThreads& t) {
  const auto plural = [](size_t n) { return n == 1 ? "" : "s"; };
  std::string blas = fmt::format("BLAS {} ({} build)", t.blas.library, t.blas.threading);
  if (t.kokkos_threads > 1)
    blas += ", called sequentially by each of them";
  else if (t.blas.threads > 0)
    blas += fmt::format(" with {} thread{}", t.blas.threads, plural(t.blas.threads));
  return fmt::format("Kokkos {} {} thread{}; {}; {} core{} visible", t.kokkos_space,
                     t.kokkos_threads, plural(t.kokkos_threads), blas, t.cpus.size(),
                     plural(t.cpus.size()));
}

std::string thread_pool_conflict(const HostThreads& t) {
  // A BLAS that starts its own pool while Kokkos' OpenMP threads spin waiting for the next
  // kernel: the two fight over the cores (measured: half the speed of one thread).
  if (t.blas.threading == "pthreads" && t.blas.threads > 1 && t.kokkos_threads > 1)
    return fmt::format(
        "the BLAS ({}, pthreads) runs its own {} threads beside Kokkos' {} OpenMP threads, and "
        "the two pools compete for the cores; set OPENBLAS_NUM_THREADS=1",
        t.blas.library, t.blas.threads, t.kokkos_threads);
  if (t.blas.threading == "unknown" && t.kokkos_threads > 1)
    return "the BLAS library is not OpenBLAS, so zeromini cannot tell whether it starts threads "
           "of its own: make it sequential (e.g. MKL_NUM_THREADS=1), since each of Kokkos' "
           "threads calls it on its own part of every GEMM";
  if (static_cast<int>(t.cpus.size()) < t.kokkos_threads && !t.cpus.empty())
    return fmt::format(
        "Kokkos runs {} threads but this rank may use only {} core{} (its CPU affinity): "
        "threads will share cores",
        t.kokkos_threads, t.cpus.size(), t.cpus.size() == 1 ? "" : "s");
  return "";
}

}  // namespace zm
