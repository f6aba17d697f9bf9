// How a run that ended abnormally ended, written where its results file is.
//
// A rank that ends the job (the watchdog, an error on one rank, a second signal) cannot rewrite
// results.h5: it is often not rank 0, and the watchdog's thread may interrupt a main thread inside
// HDF5, which is not thread-safe. So it writes a small text record beside it with POSIX calls
// only; results.h5's status "running" with it means "aborted" (io/run_status.hpp).
//
//   <results.h5>.abort:   status aborted
//                         rank <the rank that ended the job>
//                         exit_status <its exit status>
//                         reason <its message, to the end of the file>
#pragma once

#include <string>

namespace zm {

// Where this rank records an abort from now on (every rank of a run, once the run's results file
// is its own); an empty path records nothing.
void set_abort_record(const std::string& path, int rank);

// Records that this rank ends the job with `message` and `exit_code`. The first rank to record
// wins (O_EXCL): its reason is the cause, the others' follow from it. Only async-signal-safe
// calls (open, write, fsync, close): callable from any thread and from a signal handler.
void write_abort_record(const char* message, int exit_code) noexcept;

}  // namespace zm
