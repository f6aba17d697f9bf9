// One deadline for every place a rank can block: the Communicator's collectives, raw MPI calls
// (agreements, the results gather), HDF5's collective I/O, file opens and MPI_Finalize.
//
// Code that may block says so with a BlockingRegion: what it does, whether it is a collective
// (numbered, so that the ranks that have not reached it can be named) and what kind of wait it
// is. A rank that waits in one region longer than comm.timeout_s ends the job with a message
// naming the run's phase ("checkpoint write after step 12"), the operation, how long it waited
// and what a module's WaitDiagnosis (below) says of the ranks it waits for. A wait that polls
// (the MPI waits) checks its own deadline and may call MPI for that diagnosis; every other region
// is ended by the watchdog's thread, which needs nothing from the blocked thread.
//
// The same thread ends a rank that is blocked in I/O when a stop signal arrives (a write to a
// full disk that never returns must not swallow SIGTERM).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

namespace zm {

// A region's number when only this rank is in it (a file open, rank 0's results write).
constexpr int64_t kLocalRegion = -1;

enum class WaitKind {
  Blocking,  // a call that does not return until done (MPI collective, HDF5 collective call)
  Polled,    // a wait that checks its own deadline (Watchdog::check_deadline) while it polls
  Io,        // file-system I/O: as Blocking, and a stop signal during it ends the rank
  // MPI_Finalize, after every output is written and closed: past the deadline the rank ends with
  // the status given to set_finalize_status() and a warning, not an abort (MPICH over UCX/TCP
  // can deadlock there: a rank in the PMI barrier does not progress a peer's endpoint close).
  Finalize,
};

// What the watchdog says of the other ranks when a collective times out, and where the ranks
// publish what it reads (a module's, set at start-up, before a watchdog is armed; without one
// the message names only this rank's wait). The calls but create, release and a `remote`
// waited_for come from the watchdog's thread, under its lock.
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
  // " on HOST" for a rank where the job spans nodes, else "".
  virtual std::string on_host(int rank) const = 0;
  // Who this rank's collective number `sequence` waits for. `remote`: from the waiting thread,
  // which may call MPI (ending the process with `last_words` if that hangs).
  virtual std::string waited_for(int rank, int64_t sequence, int64_t now_ms, bool remote,
                                 const std::string& last_words) = 0;
};
void set_wait_diagnosis(std::function<std::unique_ptr<WaitDiagnosis>()> make);

// Owned by what starts MPI (Runtime, the test, benchmark and fuzz mains): one per process, since
// its progress slots span MPI_COMM_WORLD. It is handed to what blocks: every Communicator holds
// it (Communicator::watchdog()), and the raw MPI and file waits take it as an argument.
class Watchdog {
 public:
  Watchdog();
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Collective over MPI_COMM_WORLD the first time (the diagnosis, the thread); later calls only
  // change the timeout.
  void arm(double timeout_seconds);
  // The status this rank ends with if MPI_Finalize passes the deadline (WaitKind::Finalize):
  // kExitWatchdog until a command that completed sets its own.
  void set_finalize_status(int status);
  // Collective: frees the diagnosis's windows (before MPI_Finalize). The thread keeps watching
  // regions, without naming other ranks, until stop().
  void release();
  void stop();
  bool armed() const;
  double timeout() const;

  // The run's phase, named in every message; returns the previous one.
  std::string set_phase(std::string phase);

  // Numbers a collective over MPI_COMM_WORLD (or a communicator that spans_world) and publishes
  // the count: ranks whose count is lower have not reached it.
  int64_t next_sequence();
  // The number for a collective over `comm`: next_sequence(), or kLocalRegion when `comm` does
  // not span the same ranks as MPI_COMM_WORLD (its collectives are not counted).
  int64_t sequence_for(MPI_Comm comm) { return spans_world(comm) ? next_sequence() : kLocalRegion; }
  static bool spans_world(MPI_Comm comm);

  // For polled waits, now and then: ends the job when the innermost region is past its deadline.
  void check_deadline();

  // BlockingRegion's bookkeeping.
  void enter(std::string operation, int64_t sequence, WaitKind kind);
  void leave();

  // Work that completes where no wait polls it (collectives on a device stream): the thread
  // calls `check` at every tick once armed, whatever region is open, and ends the job with the
  // message it returns when that is not empty (DeviceOpMonitor::poll). Returns an id for
  // unwatch_device, which returns once no call of `check` is running.
  int watch_device(std::function<std::string()> check);
  void unwatch_device(int id);

 private:
  struct State;
  State& state() const { return *state_; }
  std::unique_ptr<State> state_;
};

// A scope in which this rank may block: a wait of the comm and io layers, with a deadline and a
// collective number. The run's larger pieces are Phases (comm/phase.hpp), which name the run's
// phase for these messages and may carry a deadline of their own.
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
