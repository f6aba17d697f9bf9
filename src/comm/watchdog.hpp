// One deadline (comm.timeout_s) for every place a rank can block: collectives, raw MPI calls,
// HDF5's collective I/O, file opens and MPI_Finalize. Code that may block opens a BlockingRegion
// (what it does, its collective number, the kind of wait); a rank that waits in one longer than
// the timeout ends the job, naming the run's phase, the operation, the wait and what a
// WaitDiagnosis says of the ranks it waits for. Polled waits check their own deadline (and may
// call MPI for that diagnosis); the watchdog's thread ends every other region, needing nothing
// from the blocked thread. It also ends a rank blocked in I/O when a stop signal arrives (a write
// to a full disk that never returns must not swallow SIGTERM).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

namespace zm {

// A region's number when only this rank is in it (a file open).
constexpr int64_t kLocalRegion = -1;

enum class WaitKind {
  Blocking,  // a call that does not return until done (MPI collective, HDF5 collective call)
  Polled,    // a wait that checks its own deadline (Watchdog::check_deadline) while it polls
  Io,        // file-system I/O: as Blocking, and a stop signal during it ends the rank
  // MPI_Finalize, after every output is closed: past the deadline the rank ends with a warning
  // and set_finalize_status()'s status, not an abort (MPICH over UCX/TCP can deadlock there).
  Finalize,
};

// What the watchdog says of the other ranks when a collective times out (a module's, set before
// a watchdog is armed). All calls but create, release and a `remote` waited_for come from the
// watchdog's thread, under its lock.
class WaitDiagnosis {
 public:
  virtual ~WaitDiagnosis() = default;
  // Collective over MPI_COMM_WORLD, as the watchdog is armed: `posted` collectives counted so far.
  virtual void create(int64_t posted) = 0;
  virtual void publish_posted(int64_t posted) = 0;  // this rank's count of collectives reached
  virtual void beat(int64_t now_ms) = 0;            // every tick of the watchdog's thread
  // Stops all reads (local), then frees what create made (collective, before MPI_Finalize).
  virtual void forget() = 0;
  virtual void release() = 0;
  virtual std::string on_host(int rank) const = 0;  // " on HOST" where the job spans nodes
  // Who this rank's collective number `sequence` waits for. `remote`: from the waiting thread,
  // which may call MPI (ending the process with `last_words` if that hangs).
  virtual std::string waited_for(int rank, int64_t sequence, int64_t now_ms, bool remote,
                                 const std::string& last_words) = 0;
};
void set_wait_diagnosis(std::function<std::unique_ptr<WaitDiagnosis>()> make);

// One per process, owned by what starts MPI (Runtime, the test mains) and handed to what blocks.
class Watchdog {
 public:
  Watchdog();
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Collective over MPI_COMM_WORLD the first time; later calls only change the timeout.
  void arm(double timeout_seconds);
  // The status a rank ends with if MPI_Finalize passes the deadline (default kExitWatchdog).
  void set_finalize_status(int status);
  // Collective, before MPI_Finalize: frees the diagnosis. Regions are watched until stop().
  void release();
  void stop();
  double timeout() const;

  // The run's phase, named in every message; returns the previous one.
  std::string set_phase(std::string phase);

  // Numbers a collective over the world's ranks and publishes the count: ranks whose count is
  // lower have not reached it. Collectives over fewer ranks are not counted (kLocalRegion).
  int64_t next_sequence();
  int64_t sequence_for(MPI_Comm comm) { return spans_world(comm) ? next_sequence() : kLocalRegion; }
  static bool spans_world(MPI_Comm comm);

  // For polled waits: ends the job when the innermost region is past its deadline.
  void check_deadline();

  void enter(std::string operation, int64_t sequence, WaitKind kind);
  void leave();

  // Work no wait polls (collectives on a device stream): the thread calls `check` every tick once
  // armed and ends the job with the message it returns, if any. unwatch_device returns once no
  // call of `check` is running.
  int watch_device(std::function<std::string()> check);
  void unwatch_device(int id);

 private:
  struct State;
  State& state() const { return *state_; }
  std::unique_ptr<State> state_;
};

// A scope in which this rank may block, with a deadline and a collective number (the run's
// larger pieces are Phases, comm/phase.hpp).
class BlockingRegion {
 public:
  BlockingRegion(Watchdog& watchdog, std::string operation, int64_t sequence, WaitKind kind)
      : watchdog_(watchdog) {
    watchdog_.enter(std::move(operation), sequence, kind);
  }
  ~BlockingRegion() { watchdog_.leave(); }
  BlockingRegion(const BlockingRegion&) = delete;
  BlockingRegion& operator=(const BlockingRegion&) = delete;

 private:
  Watchdog& watchdog_;
};

}  // namespace zm
