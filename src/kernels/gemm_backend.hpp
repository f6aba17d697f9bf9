// Internal to gemm.cpp: which backend runs the GEMMs in this build, and its interface.
#pragma once

#include <KokkosKernels_config.h>

#include <cstdint>

#include "core/compat.hpp"
#include "core/precision.hpp"

// cuBLAS on a GPU, the host BLAS behind Kokkos Kernels on the host (CMake refuses neither).
#if defined(KOKKOS_ENABLE_CUDA) && defined(KOKKOSKERNELS_ENABLE_TPL_CUBLAS)
#define ZEROMINI_GEMM_CUBLAS 1
#elif !defined(KOKKOS_ENABLE_CUDA) && !defined(KOKKOS_ENABLE_HIP) && \
    !defined(KOKKOS_ENABLE_SYCL) && defined(KOKKOSKERNELS_ENABLE_TPL_BLAS)
#define ZEROMINI_GEMM_HOST_BLAS 1
#else
#error "zeromini needs Kokkos Kernels with cuBLAS (CUDA builds) or a host BLAS (host builds)"
#endif

namespace zm::kernels::detail {

struct GemmShape {
  bool trans_a, trans_b;
  int64_t M, N, K;
  GemmMath math = GemmMath::FP32;
  int64_t ld_a = 0, ld_c = 0;  // 0: contiguous
  int64_t lda() const { return ld_a != 0 ? ld_a : trans_a ? M : K; }
  int64_t ldb() const { return trans_b ? K : N; }
  int64_t ldc() const { return ld_c != 0 ? ld_c : N; }
};

template <typename T>
void gemm_backend(const GemmShape& s, T alpha, const T* A, int64_t stride_a, const T* B,
                  int64_t stride_b, T beta, T* C, int64_t stride_c, int64_t batch);
#define ZM_INSTANTIATE_GEMM_BACKEND(T)                                                            \
  template void gemm_backend<T>(const GemmShape&, T, const T*, int64_t, const T*, int64_t, T, T*, \
                                int64_t, int64_t);

// C_i = beta * C_i (zeros for beta = 0): the GEMM of K = 0, as BLAS defines it. Every backend
// takes this path rather than call its library, which may reject the leading dimension 0 (cuBLAS,
// a reference BLAS) or leave C unscaled (Kokkos Kernels 3.x).
template <typename T>
void gemm_without_terms(const GemmShape& s, T beta, T* C, int64_t stride_c, int64_t batch);

}  // namespace zm::kernels::detail
