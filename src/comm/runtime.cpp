#include "comm/runtime.hpp"

#include <mpi.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "comm/device_select.hpp"
#include "comm/mpi_defaults.hpp"

#include "core/compat.hpp"
#include "core/exit_codes.hpp"
#include "core/fault_points.hpp"
#include "core/log.hpp"
#include "core/sequential_blas.hpp"
#include "core/stop_signal.hpp"
#include "core/timer.hpp"

namespace zm {

namespace {

// MPI_Init with a bound on its wait: MPICH's launcher, signalled in its first milliseconds, can
// leave its ranks in MPI_Init for ever. When the call has not returned within
// ZEROMINI_MPI_INIT_TIMEOUT_S seconds (default 600), or 5 s after a stop signal, the rank says why
// and exits (status 5, or 128 + the signal).
constexpr double kInitTimeoutSeconds = 600;
constexpr double kInitAfterSignalSeconds = 5;

double init_timeout_seconds() {
  const char* text = std::getenv("ZEROMINI_MPI_INIT_TIMEOUT_S");
  if (!text) return kInitTimeoutSeconds;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  return end != text && seconds > 0 ? seconds : kInitTimeoutSeconds;
}

[[noreturn]] void end_rank(const std::string& message, int status) {
  std::fprintf(stderr, "zeromini: error: %s\n", message.c_str());
  std::fflush(stderr);
  _exit(status);
}

// Polls until `returned`; ends the process when the deadline passes first.
void watch_init(const std::atomic<bool>& returned, double timeout) {
  const double start = wall_seconds();
  while (!returned.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const double now = wall_seconds();
    const int signal = stop_signal();
    if (signal != 0 && now - stop_signal_time() > kInitAfterSignalSeconds)
      end_rank(std::string("stopped by ") + signal_name(signal) +
                   " while MPI_Init had not returned (the launcher's start-up; use srun, or "
                   "`timeout -s KILL` around mpiexec)",
               kExitSignalBase + signal);
    if (now - start > timeout)
      end_rank("MPI_Init did not return within " + std::to_string(timeout) +
                   " s (ZEROMINI_MPI_INIT_TIMEOUT_S): the launcher or the process manager did "
                   "not start this rank's job",
               kExitWatchdog);
  }
}

void init_mpi_with_deadline(int& argc, char**& argv) {
  std::atomic<bool> returned{false};
  std::thread watcher(watch_init, std::cref(returned), init_timeout_seconds());
  fault_point("mpi.init", -1, 0);
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  returned.store(true);
  watcher.join();
}

}  // namespace

Runtime::Runtime(int& argc, char**& argv, Devices devices) {
  zm::apply_mpi_library_defaults();
  init_mpi_with_deadline(argc, argv);
  install_stop_signals();  // again: in case the MPI library installed its own
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  // MPI errors become messages that name the operation, not MPI's abort without context.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  set_log_rank(rank_);
  if (devices == Devices::None) return;
  start_kokkos_on_local_device(argc, argv, MPI_COMM_WORLD, watchdog_);
  make_blas_calls_sequential();
}

Runtime::~Runtime() {
  watchdog_.release();  // collective, while MPI is up
  if (Kokkos::is_initialized()) Kokkos::finalize();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) {
    BlockingRegion region(watchdog_, "MPI_Finalize", kLocalRegion, WaitKind::Finalize);
    MPI_Finalize();
  }
  watchdog_.stop();
}

}  // namespace zm
