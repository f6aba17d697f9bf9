#include "core/stop_signal.hpp"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <ctime>

#include "core/abort_record.hpp"
#include "core/exit_codes.hpp"

namespace zm {

namespace {

volatile std::sig_atomic_t g_stop_signal = 0;
volatile std::sig_atomic_t g_end_at_once = 0;
// When the first signal came, in nanoseconds of CLOCK_MONOTONIC (lock-free, so a handler may
// store it; clock_gettime is async-signal-safe).
std::atomic<int64_t> g_stop_time_ns{0};
static_assert(std::atomic<int64_t>::is_always_lock_free, "a handler stores it");

void say(const char* text) {
  const ssize_t ignored = write(2, text, std::strlen(text));
  (void)ignored;
}

// A signal this soon after the first is the same request delivered twice (the launcher forwards
// it, and the batch system signals every task too), not a second request.
constexpr int64_t kSameRequestNs = 2000000000;

// Only async-signal-safe calls: clock_gettime(2), write(2), _exit(2) and the abort record's.
extern "C" void on_stop_signal(int signal) {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  const int64_t now_ns = int64_t(now.tv_sec) * 1000000000 + now.tv_nsec;
  if (g_end_at_once) {
    say("zeromini: terminated by a signal\n");
    _exit(kExitSignalBase + signal);
  }
  if (g_stop_signal != 0) {
    if (now_ns - g_stop_time_ns.load() < kSameRequestNs) return;
    say("zeromini: second stop signal: ending this rank now\n");
    write_abort_record("zeromini: a second stop signal ended this rank", kExitSignalBase + signal);
    _exit(kExitSignalBase + signal);
  }
  g_stop_time_ns = now_ns;
  g_stop_signal = signal;
}

}  // namespace

void install_stop_signals() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  // Restart interrupted system calls: a read or a collective interrupted by the first signal goes
  // on, and the run stops at the end of the step.
  action.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
}

int stop_signal() {
  return g_stop_signal;
}

double stop_signal_time() {
  return static_cast<double>(g_stop_time_ns.load()) * 1e-9;
}

const char* signal_name(int signal) {
  return signal == 0         ? ""
         : signal == SIGTERM ? "SIGTERM"
         : signal == SIGINT  ? "SIGINT"
                             : "a signal";
}

void stop_signals_end_process() {
  g_end_at_once = 1;
  if (g_stop_signal != 0) _exit(kExitSignalBase + g_stop_signal);
}

}  // namespace zm
