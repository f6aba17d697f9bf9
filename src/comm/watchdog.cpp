#include "comm/watchdog.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "core/abort_job.hpp"
#include "core/abort_record.hpp"
#include "core/exit_codes.hpp"
#include "core/stop_signal.hpp"
#include "core/timer.hpp"

namespace zm {

namespace {

constexpr auto kTick = std::chrono::milliseconds(100);
// A polled wait reports its own timeout (it can read other nodes); the thread steps in only if
// that did not happen this much later.
constexpr double kPolledGraceSeconds = 2.0;
// A stop signal during blocking I/O: the I/O may still finish this quickly, else the rank ends.
constexpr double kSignalGraceSeconds = 3.0;

struct Region {
  std::string operation;
  int64_t sequence;
  WaitKind kind;
  double entered;   // when the region began
  double progress;  // when it began, or when the last region nested in it ended
};

// MPI_Finalize deletes MPI_COMM_SELF's attributes first: the diagnosis is released there when a
// program did not release it (windows still locked at MPI_Finalize make UCX abort).
extern "C" int release_at_finalize(MPI_Comm, int, void*, void* watchdog) {
  static_cast<Watchdog*>(watchdog)->release();
  return MPI_SUCCESS;
}

int64_t milliseconds(double seconds) {
  return static_cast<int64_t>(seconds * 1e3);
}

std::function<std::unique_ptr<WaitDiagnosis>()>& diagnosis_maker() {
  static std::function<std::unique_ptr<WaitDiagnosis>()> make;
  return make;
}

}  // namespace

void set_wait_diagnosis(std::function<std::unique_ptr<WaitDiagnosis>()> make) {
  diagnosis_maker() = std::move(make);
}

struct Watchdog::State {
  std::mutex mutex;  // guards everything below but `running`
  std::vector<Region> regions;
  std::string phase = "start-up";
  double timeout = 300.0;
  int rank = 0;
  int finalize_status = kExitWatchdog;
  int64_t posted = 0;
  std::unique_ptr<WaitDiagnosis> diagnosis;  // a module's, or none
  std::thread thread;
  std::atomic<bool> running{false};
  // Held while the device checks run, so that unwatch_device waits for a running one.
  std::mutex device_mutex;
  std::vector<std::pair<int, std::function<std::string()>>> device_checks;
  int next_device_check = 0;

  ~State() {
    running = false;
    if (thread.joinable()) thread.join();
  }
  void watch();
  void check_devices();
  [[noreturn]] void end_job(const std::string& message, int code);
  [[noreturn]] void end_in_finalize(double waited);
  std::string describe(const Region& region, double waited, const std::string& ranks) const;
  std::string on_host(int r) const { return diagnosis ? diagnosis->on_host(r) : ""; }
  std::string waited_for(const Region& region, double now, bool remote);
};

Watchdog::Watchdog() : state_(std::make_unique<State>()) {}

Watchdog::~Watchdog() = default;

void Watchdog::arm(double timeout_seconds) {
  State& s = state();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.timeout = timeout_seconds;
  }
  if (s.running) return;
  MPI_Comm_rank(MPI_COMM_WORLD, &s.rank);
  if (diagnosis_maker()) {
    s.diagnosis = diagnosis_maker()();
    s.diagnosis->create(s.posted);
  }
  int key = MPI_KEYVAL_INVALID;
  MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, release_at_finalize, &key, this);
  MPI_Comm_set_attr(MPI_COMM_SELF, key, nullptr);
  s.running = true;
  s.thread = std::thread([&s] { s.watch(); });
}

void Watchdog::set_finalize_status(int status) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->finalize_status = status;
}

void Watchdog::release() {
  State& s = state();
  if (!s.diagnosis) return;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.diagnosis->forget();  // the thread no longer reads the windows
  }
  BlockingRegion region(*this, "freeing the watchdog's progress windows", kLocalRegion,
                        WaitKind::Blocking);
  s.diagnosis->release();
}

void Watchdog::stop() {
  State& s = state();
  if (!s.running) return;
  s.running = false;
  s.thread.join();
}

double Watchdog::timeout() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->timeout;
}

std::string Watchdog::set_phase(std::string phase) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  std::swap(state_->phase, phase);
  return phase;
}

bool Watchdog::spans_world(MPI_Comm comm) {
  int same = MPI_UNEQUAL;
  MPI_Comm_compare(comm, MPI_COMM_WORLD, &same);
  return same == MPI_IDENT || same == MPI_CONGRUENT;
}

int64_t Watchdog::next_sequence() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  ++s.posted;
  if (s.diagnosis) s.diagnosis->publish_posted(s.posted);
  return s.posted;
}

void Watchdog::enter(std::string operation, int64_t sequence, WaitKind kind) {
  const double now = wall_seconds();
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->regions.push_back(Region{std::move(operation), sequence, kind, now, now});
}

void Watchdog::leave() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.regions.pop_back();
  if (!s.regions.empty()) s.regions.back().progress = wall_seconds();
}

int Watchdog::watch_device(std::function<std::string()> check) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.device_mutex);
  s.device_checks.emplace_back(++s.next_device_check, std::move(check));
  return s.next_device_check;
}

void Watchdog::unwatch_device(int id) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.device_mutex);
  const auto watched = [id](const auto& entry) { return entry.first == id; };
  s.device_checks.erase(std::remove_if(s.device_checks.begin(), s.device_checks.end(), watched),
                        s.device_checks.end());
}

// From the thread, outside `mutex`: a check may take its own locks and call the device.
void Watchdog::State::check_devices() {
  std::lock_guard<std::mutex> lock(device_mutex);
  for (const auto& entry : device_checks) {
    const std::string failure = entry.second();
    if (!failure.empty()) end_job(failure, kExitWatchdog);
  }
}

void Watchdog::check_deadline() {
  State& s = state();
  const double now = wall_seconds();
  Region region;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.regions.empty() || now - s.regions.back().progress <= s.timeout) return;
    region = s.regions.back();
  }
  // This is the waiting thread, which may call MPI: it can read the ranks on other nodes too.
  const std::string ranks = s.waited_for(region, now, true);
  std::string message;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    message = s.describe(region, now - region.progress, ranks);
  }
  abort_job(message.c_str(), kExitWatchdog);
}

// The thread: the heartbeat, and the end of a region past its deadline or of interrupted I/O.
void Watchdog::State::watch() {
  while (running) {
    std::this_thread::sleep_for(kTick);
    check_devices();
    const double now = wall_seconds();
    std::lock_guard<std::mutex> lock(mutex);
    if (diagnosis) diagnosis->beat(milliseconds(now));
    if (regions.empty()) continue;
    const Region& region = regions.back();
    const double signalled = stop_signal() ? stop_signal_time() : -1.0;
    if (region.kind == WaitKind::Io && signalled >= region.entered &&
        now - signalled > kSignalGraceSeconds)
      end_job(
          fmt::format("zeromini: rank {}: {} received during blocking I/O ({}: {}), which has "
                      "not finished {:.0f} s later; ending this rank (the previous checkpoint "
                      "and 'latest' are untouched).",
                      rank, signal_name(stop_signal()), phase, region.operation, now - signalled),
          kExitSignalBase + stop_signal());
    if (region.kind == WaitKind::Finalize && now - region.progress > timeout)
      end_in_finalize(now - region.progress);
    const double limit = timeout + (region.kind == WaitKind::Polled ? kPolledGraceSeconds : 0.0);
    if (now - region.progress > limit)
      end_job(describe(region, now - region.progress, waited_for(region, now, false)),
              kExitWatchdog);
  }
}

// Everything the command wrote is closed before MPI_Finalize, so a finalize that does not return
// loses nothing: the rank ends with the command's own status, saying why (no abort record).
void Watchdog::State::end_in_finalize(double waited) {
  const std::string line = fmt::format(
      "zeromini: rank {}{}: warning: MPI_Finalize has not returned after {:.0f} s (comm.timeout_s "
      "= {}); every output was written and closed before it, so this rank ends now with status "
      "{}. MPICH over UCX and TCP can deadlock in MPI_Finalize (a rank in the PMI barrier does "
      "not progress a peer's endpoint close).\n",
      rank, on_host(rank), waited, timeout, finalize_status);
  const ssize_t ignored = write(2, line.data(), line.size());
  (void)ignored;
  _exit(finalize_status);
}

// From the thread: no MPI call (the main thread may be inside the library). The process ends;
// the launcher ends the job's other ranks when one of them exits without MPI_Finalize.
void Watchdog::State::end_job(const std::string& message, int code) {
  const std::string line = message + "\n";
  const ssize_t ignored = write(2, line.data(), line.size());
  (void)ignored;
  write_abort_record(message.c_str(), code);
  _exit(code);
}

std::string Watchdog::State::describe(const Region& region, double waited,
                                      const std::string& ranks) const {
  const std::string which = region.sequence == kLocalRegion
                                ? std::string(" (this rank alone)")
                                : fmt::format(" (collective #{} on this rank)", region.sequence);
  return fmt::format(
      "zeromini: rank {}{}: watchdog: {}: {}{} has waited {:.0f} s, more than comm.timeout_s = "
      "{}; {}. Aborting the job.",
      rank, on_host(rank), phase, region.operation, which, waited, timeout, ranks);
}

// Who the region waits for, as the diagnosis says; `remote`: it may read other nodes (MPI).
std::string Watchdog::State::waited_for(const Region& region, double now, bool remote) {
  if (region.sequence == kLocalRegion)
    return "no other rank's progress is watched in this operation: the file system, the device or "
           "the network does not answer";
  if (!diagnosis) return "the other ranks' progress is not watched in this build";
  const std::string last_words =
      remote ? describe(region, now - region.progress,
                        "ranks on other nodes could not be read (the reads hung)") +
                   "\n"
             : "";
  return diagnosis->waited_for(rank, region.sequence, milliseconds(now), remote, last_words);
}

}  // namespace zm
