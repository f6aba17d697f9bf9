#include "comm/runtime.hpp"

#include <mpi.h>

#include "comm/device_select.hpp"
#include "comm/mpi_defaults.hpp"
#include "comm/mpi_init_deadline.hpp"
#include "comm/watchdog.hpp"

#include "core/compat.hpp"
#include "core/log.hpp"
#include "core/sequential_blas.hpp"
#include "core/stop_signal.hpp"

namespace zm {

Runtime::Runtime(int& argc, char**& argv, Devices devices) {
  zm::apply_mpi_library_defaults();
  init_mpi_with_deadline(argc, argv);
  install_stop_signals();  // again: in case the MPI library installed its own
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  // Errors from MPI are turned into messages that name the operation (src/comm), not into
  // MPI's default abort without context.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  set_log_rank(rank_);
  if (devices == Devices::None) return;
  // One GPU per rank: the local rank modulo the visible GPUs (SLURM_LOCALID or not).
  start_kokkos_on_local_device(argc, argv, MPI_COMM_WORLD, watchdog_);
  make_blas_calls_sequential();
}

Runtime::~Runtime() {
  watchdog_.release();  // collective, while MPI is up
  if (Kokkos::is_initialized()) Kokkos::finalize();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) {
    BlockingRegion region(watchdog_, "MPI_Finalize", kLocalRegion, WaitKind::Finalize);
    MPI_Finalize();
  }
  watchdog_.stop();
}

}  // namespace zm
