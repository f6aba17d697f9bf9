// What `zeromini run` exits with, and the other subcommands (0, 1, 2 and 4 of these). The
// README's exit-status table lists the same; a run never exits 0 unless it finished, or stopped
// on a signal after saving its state.
#pragma once

namespace zm {

enum ExitCode : int {
  kExitCompleted = 0,   // finished, or stopped on SIGTERM/SIGINT after writing a checkpoint
  kExitRankFailed = 1,  // a rank failed (internal or MPI error); the job was aborted
  kExitBadInput = 2,    // deck, command line, refused checkpoint, run that cannot fit, output
                        // directory in use or holding another run
  kExitNonFinite = 3,   // the loss or gradient norm was not finite
  kExitIoError = 4,     // a checkpoint, results or scratch-file write or read failed (disk full)
  kExitWatchdog = 5,    // a rank did not arrive within comm.timeout_s
  kExitTerminated = 6,  // stopped on a signal without a checkpoint (none configured, or before
                        // training started); results were flushed
  // 7..127: a module's own statuses (its README says which it gives and why)
  kExitSignalBase = 128  // + signal number: aborted by a second signal, or one during blocking I/O
};

}  // namespace zm
