/* Preloaded into the ranks of the MPI test programs (LD_PRELOAD, tests/CMakeLists.txt) where
 * MPICH's ch4:ucx device runs them, and usable by anyone who runs more ranks than cores.
 *
 * Why: a rank waiting for a message polls UCX (ucp_worker_progress) without ever giving up its
 * core. With more ranks than cores, as the suite's 3- and 4-rank tests on a 2-core machine, the
 * rank it waits for is often not running, and every step of a collective then costs the
 * poller's whole time slice: a 4-rank run writing six checkpoints took 29 s instead of 6.6 s.
 * MPICH's ch3 device yields after MPIR_CVAR_POLLS_BEFORE_YIELD empty polls; 4.0.x's ch4:ucx
 * does not read that variable (setting it changed nothing here).
 *
 * What: after 64 polls in a row that found nothing, the rank yields its core once. Where every
 * rank has a core of its own the yield returns at once. After 16 such yields in a row (about
 * 1,000 empty polls: the message is late, its sender is computing or has no core) each further
 * yield becomes a 50 us sleep: a yielding rank still keeps its core from a process at a lower
 * priority, as CI's CUDA compile at nice 19 beside the tests. Measured on 2 cores, 12 of the
 * 2- to 4-rank GoogleTest entries beside two busy loops at nice 19: 26-27 s with yields only,
 * 17.5-18.4 s with the sleeps, the loops getting 15-16 CPU-seconds instead of 13-14; on the idle
 * machine 9.8 s either way. The symbol shadows libucp's only in processes that load this
 * library. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <time.h>
#include <ucp/api/ucp.h>

enum { kEmptyPollsBeforeYield = 64, kYieldsBeforeSleep = 16 };

unsigned ucp_worker_progress(ucp_worker_h worker) {
  static unsigned (*libucp_progress)(ucp_worker_h);
  static __thread unsigned empty_polls, yields;
  if (!libucp_progress)
    libucp_progress = (unsigned (*)(ucp_worker_h))dlsym(RTLD_NEXT, "ucp_worker_progress");
  const unsigned events = libucp_progress(worker);
  if (events) {
    empty_polls = 0;
    yields = 0;
  } else if (++empty_polls >= kEmptyPollsBeforeYield) {
    empty_polls = 0;
    if (++yields < kYieldsBeforeSleep) {
      sched_yield();
    } else {
      const struct timespec pause = {0, 50000};
      nanosleep(&pause, NULL);
    }
  }
  return events;
}
