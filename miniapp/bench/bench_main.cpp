// zeromini-bench: Google Benchmark micro-benchmarks of kernels, collectives and training steps.
// MPI and Kokkos are initialised here once; benchmarks that need several ranks run under
// mpiexec and report from rank 0.
#include <benchmark/benchmark.h>
#include <mpi.h>

#include "comm/device_select.hpp"
#include "comm/mpi_defaults.hpp"
#include "comm/watchdog.hpp"
#include "core/modules.hpp"

#include <cstdio>
#include <vector>

#include "bench_util.hpp"
#include "core/compat.hpp"
#include "core/error.hpp"
#include "core/modules.hpp"

namespace zm::bench {
namespace {
Watchdog* g_watchdog = nullptr;  // main()'s, while it runs the benchmarks
std::vector<std::function<void()>>& cleanups() {
  static std::vector<std::function<void()>> list;
  return list;
}
}  // namespace
Watchdog& watchdog() {
  return *g_watchdog;
}
void before_finalize(std::function<void()> cleanup) {
  cleanups().push_back(std::move(cleanup));
}
void run_cleanups() {
  for (auto it = cleanups().rbegin(); it != cleanups().rend(); ++it) (*it)();
  cleanups().clear();
}
}  // namespace zm::bench

namespace {
// Only rank 0 prints; the other ranks run the same benchmarks (collectives need them) silently.
class NullReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};
}  // namespace

int main(int argc, char** argv) {
  zm::register_modules();
  zm::Watchdog watchdog;  // destroyed after MPI_Finalize, which may release it
  zm::bench::g_watchdog = &watchdog;
  zm::apply_mpi_library_defaults();
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  try {
    zm::bench::take_backend_option(argc, argv);
  } catch (const zm::Error& e) {
    if (rank == 0) std::fprintf(stderr, "%s\n", e.what());
    MPI_Finalize();
    return 2;
  }
  // One GPU per rank, as in the app: the local rank modulo the visible GPUs.
  zm::start_kokkos_on_local_device(argc, argv, MPI_COMM_WORLD, watchdog);
  {
    benchmark::Initialize(&argc, argv);
    if (rank == 0) {
      benchmark::RunSpecifiedBenchmarks();
    } else {
      NullReporter quiet;
      benchmark::RunSpecifiedBenchmarks(&quiet);
    }
    benchmark::Shutdown();
    zm::bench::run_cleanups();
  }
  watchdog.release();  // collective, while MPI is up (benchmarks arm it)
  Kokkos::finalize();
  MPI_Finalize();
  watchdog.stop();
  return 0;
}
