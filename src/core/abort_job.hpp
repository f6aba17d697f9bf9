// Ending the whole job from one rank, for errors the other ranks cannot learn of in time.
#pragma once

namespace zm {

// Prints `message`, then ends every rank (MPI_Abort when MPI is up, else exit).
[[noreturn]] void abort_job(const char* message, int exit_code = 1);

}  // namespace zm
