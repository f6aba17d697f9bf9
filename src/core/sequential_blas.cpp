#include "core/sequential_blas.hpp"

#include <dlfcn.h>

#include "core/compat.hpp"

namespace zm {

namespace {

// The BLAS is whatever the dynamic linker loaded for Kokkos Kernels; OpenBLAS says what it is
// through functions of its own. They are looked up rather than linked so that any BLAS works.
template <typename Function>
Function blas_function(const char* name) {
  return reinterpret_cast<Function>(dlsym(RTLD_DEFAULT, name));
}

}  // namespace

void make_blas_calls_sequential() {
  if (Kokkos::DefaultHostExecutionSpace().concurrency() <= 1) return;
  // Only a pthreads OpenBLAS: an OpenMP one is sequential inside a parallel region already, and
  // its openblas_set_num_threads would set OpenMP's thread count too.
  const auto parallel = blas_function<int (*)()>("openblas_get_parallel");
  const auto set_threads = blas_function<void (*)(int)>("openblas_set_num_threads");
  if (parallel && set_threads && parallel() == 1) set_threads(1);
}

}  // namespace zm
