#include "core/abort_job.hpp"

#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "core/abort_record.hpp"

namespace zm {

void abort_job(const char* message, int exit_code) {
  std::fprintf(stderr, "%s\n", message);
  std::fflush(stderr);
  write_abort_record(message, exit_code);
  // MPI_Abort makes the launcher kill every rank at once, and output still in its pipes can be
  // lost with them: give it a moment to forward this message first.
  usleep(500 * 1000);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::exit(exit_code);
}

}  // namespace zm
