// Internal to the GEMM wrappers (gemm.cpp): which backend runs them in this build, and the
// interface each backend implements.
#pragma once

#include <KokkosKernels_config.h>

#include <cstdint>

#include "core/compat.hpp"
#include "core/precision.hpp"

// cuBLAS where the kernels run on a GPU; the host BLAS behind Kokkos Kernels where they run on
// the host. CMake refuses a Kokkos Kernels with neither (cmake/ZeroMiniKokkos.cmake).
#if defined(KOKKOS_ENABLE_CUDA) && defined(KOKKOSKERNELS_ENABLE_TPL_CUBLAS)
#define ZEROMINI_GEMM_CUBLAS 1
#elif !defined(KOKKOS_ENABLE_CUDA) && !defined(KOKKOS_ENABLE_HIP) && \
    !defined(KOKKOS_ENABLE_SYCL) && defined(KOKKOSKERNELS_ENABLE_TPL_BLAS)
#define ZEROMINI_GEMM_HOST_BLAS 1
#else
#error "zeromini needs Kokkos Kernels with cuBLAS (CUDA builds) or a host BLAS (host builds)"
#endif

namespace zm::kernels::detail {

// The shape of a row-major GEMM C (M x N) = op(A) (M x K) * op(B) (K x N).
struct GemmShape {
  bool trans_a, trans_b;
  int64_t M, N, K;
  // Float GEMMs on TF32 tensor cores where the backend has them (cuBLAS); others ignore it.
  GemmMath math = GemmMath::FP32;
  // Leading dimensions of the row-major operands.
  int64_t lda() const { return trans_a ? M : K; }
  int64_t ldb() const { return trans_b ? K : N; }
};

// `batch` GEMMs of one shape, matrix i at A + i * stride_a (B, C likewise), as one operation.
template <typename T>
void gemm_backend(const GemmShape& s, T alpha, const T* A, int64_t stride_a, const T* B,
                  int64_t stride_b, T beta, T* C, int64_t stride_c, int64_t batch);
// Its explicit instantiation for T, in the backend's file.
#define ZM_INSTANTIATE_GEMM_BACKEND(T)                                                            \
  template void gemm_backend<T>(const GemmShape&, T, const T*, int64_t, const T*, int64_t, T, T*, \
                                int64_t, int64_t);

// C_i = beta * C_i for the `batch` matrices C + i * stride_c (one where stride_c is 0): a GEMM
// whose sums have no terms (K = 0), as BLAS defines it; beta = 0 writes zeros whatever C held.
// Every backend's GEMM (gemm.cpp) takes this path for K = 0 rather than call its library: cuBLAS
// rejects the leading dimension 0 that K = 0 gives A or B, so does a reference host BLAS (its
// xerbla stops the program; OpenBLAS takes it), and Kokkos Kernels 3.x returns with C unscaled.
template <typename T>
void gemm_without_terms(const GemmShape& s, T beta, T* C, int64_t stride_c, int64_t batch);

}  // namespace zm::kernels::detail
