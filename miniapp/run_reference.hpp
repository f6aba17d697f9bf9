// `zeromini run --check-reference FILE` and `--write-reference FILE`: a run's losses compared
// with a committed reference, or written as one (io/reference_*.hpp). Checked before training, so
// that a run the reference cannot judge is refused at once; done after it, by rank 0.
#pragma once

#include <mpi.h>

#include <string>

#include "commands.hpp"
#include "core/deck.hpp"
#include "io/reference_file.hpp"
#include "io/run_records.hpp"

namespace zm {
class Watchdog;
}

namespace zm::cli {

struct ReferenceRun {
  std::string check_file;  // --check-reference, or ""
  Reference check;         // read from it
  std::string write_file;  // --write-reference, or ""
};

// On every rank, before training: reads the reference to check against and refuses a run it
// cannot judge; refuses a reference that could not be written (a resumed run, bf16, a FIFO or a
// missing directory in its place). Throws zm::Error: bad input.
ReferenceRun prepare_reference(const RunOptions& options, const Deck& deck, int ranks);

// After training: rank 0 compares the losses and reports (a miss: stage, step, both losses, the
// relative difference), and writes the reference of a completed run. Every rank returns the same
// status: `status`, the run's, unless the run completed (0) and a loss missed
// (kExitReferenceMiss) or the reference could not be written (kExitIoError).
int finish_reference(const ReferenceRun& reference, const RunOptions& options, const Deck& deck,
                     const RunOutcome& outcome, const std::string& build, int status,
                     Watchdog& watchdog, MPI_Comm comm);

}  // namespace zm::cli
