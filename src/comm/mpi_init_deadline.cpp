#include "comm/mpi_init_deadline.hpp"

#include <mpi.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "core/exit_codes.hpp"
#include "core/fault_points.hpp"
#include "core/stop_signal.hpp"

namespace zm {

namespace {

constexpr double kDefaultSeconds = 600;
constexpr double kAfterSignalSeconds = 5;

double init_timeout_seconds() {
  const char* text = std::getenv("ZEROMINI_MPI_INIT_TIMEOUT_S");
  if (!text) return kDefaultSeconds;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  return end != text && seconds > 0 ? seconds : kDefaultSeconds;
}

[[noreturn]] void end_rank(const std::string& message, int status) {
  std::fprintf(stderr, "zeromini: error: %s\n", message.c_str());
  std::fflush(stderr);
  _exit(status);
}

// Polls until `returned`; ends the process when the deadline passes first.
void watch_init(const std::atomic<bool>& returned, double timeout) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  Clock::time_point signalled{};
  while (!returned.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const double waited = std::chrono::duration<double>(Clock::now() - start).count();
    const int signal = stop_signal();
    if (signal != 0 && signalled == Clock::time_point{}) signalled = Clock::now();
    if (signal != 0 &&
        std::chrono::duration<double>(Clock::now() - signalled).count() > kAfterSignalSeconds)
      end_rank(std::string("stopped by ") + signal_name(signal) +
                   " while MPI_Init had not returned (the launcher's start-up; use srun, or "
                   "`timeout -s KILL` around mpiexec)",
               kExitSignalBase + signal);
    if (waited > timeout)
      end_rank("MPI_Init did not return within " + std::to_string(timeout) +
                   " s (ZEROMINI_MPI_INIT_TIMEOUT_S): the launcher or the process manager did "
                   "not start this rank's job",
               kExitWatchdog);
  }
}

}  // namespace

int init_mpi_with_deadline(int& argc, char**& argv) {
  std::atomic<bool> returned{false};
  std::thread watcher(watch_init, std::cref(returned), init_timeout_seconds());
  fault_point("mpi.init", -1, 0);
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  returned.store(true);
  watcher.join();
  return provided;
}

}  // namespace zm
