// Settings of the MPI library that zeromini chooses unless the user already did. Call before
// MPI_Init.
#pragma once

#include <mpi.h>

#include <cstdlib>

namespace zm {

// MPICH: the default schedule of MPI_Ireduce_scatter_block (recursive halving) runs about 8x
// slower than the pairwise exchange for the MiB-sized reduce-scatters ZeRO posts (zeromini-bench,
// MPICH 4.0, shared memory), so MPIR_CVAR_IREDUCE_SCATTER_BLOCK_INTRA_ALGORITHM=sched_pairwise
// unless set. Other MPI libraries are left alone.
inline void apply_mpi_library_defaults() {
#if defined(MPICH)
  setenv("MPIR_CVAR_IREDUCE_SCATTER_BLOCK_INTRA_ALGORITHM", "sched_pairwise", /*overwrite=*/0);
#endif
}

}  // namespace zm
