// The BLAS that Kokkos Kernels' host GEMMs call, as this process uses it beside Kokkos' host
// threads.
#pragma once

namespace zm {

// With several Kokkos host threads, every thread calls the BLAS on its own block of a GEMM
// (kernels/gemm_host.cpp), so each BLAS call must run sequentially. An OpenMP BLAS does so inside
// a parallel region by itself; a pthreads OpenBLAS is set to one thread here. Idempotent.
void make_blas_calls_sequential();

}  // namespace zm
