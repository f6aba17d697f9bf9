// GEMMs on row-major matrices in device memory, single and strided-batched, through Kokkos
// Kernels: cuBLAS on GPUs; on the host the BLAS behind Kokkos Kernels, spread over Kokkos' host
// threads (see gemm.cpp).
#pragma once

#include <cstdint>

#include "core/compat.hpp"
#include "core/precision.hpp"

namespace zm::kernels {

// C = alpha * op(A) * op(B) + beta * C on row-major, contiguous matrices in device memory.
// op(A) is M x K (A is M x K, or K x M when trans_a), op(B) is K x N (B is K x N, or N x K when
// trans_b), C is M x N. `math`: the arithmetic of float GEMMs (PrecisionPolicy::gemm_math; TF32
// only where cuBLAS runs them, full fp32 elsewhere). K = 0 gives C = beta * C, as BLAS defines it
// (beta = 0: zeros, whatever C held), on every backend. Batched: `batch` independent GEMMs of one
// shape, matrix i at A + i * stride_a (B, C likewise), as one call (a strided-batched cuBLAS GEMM
// on GPUs, the batch spread over the threads on the host).
// `ld`: A and C may be columns of wider row-major matrices, their rows ld.a and ld.c elements
// apart (a tile of a layer's output: model/gpt.cpp); 0 means contiguous.
struct LeadingDims {
  int64_t a = 0, c = 0;
};
template <typename T>
void gemm_strided_batched(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha,
                          const T* A, int64_t stride_a, const T* B, int64_t stride_b, T beta, T* C,
                          int64_t stride_c, int64_t batch, GemmMath math = GemmMath::FP32,
                          LeadingDims ld = {});

template <typename T>
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
          const T* B, T beta, T* C, GemmMath math = GemmMath::FP32, LeadingDims ld = {}) {
  gemm_strided_batched(trans_a, trans_b, M, N, K, alpha, A, 0, B, 0, beta, C, 0, 1, math, ld);
}

}  // namespace zm::kernels
