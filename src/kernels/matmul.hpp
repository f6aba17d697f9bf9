// Dense layers and the GEMM wrapper, through Kokkos Kernels (KokkosBlas::gemm; the BLAS or
// cuBLAS TPL underneath).
#pragma once

#include <cstdint>

#include "core/compat.hpp"

namespace zm::kernels {

// C = alpha * op(A) * op(B) + beta * C on row-major, contiguous matrices in device memory.
// op(A) is M x K (A is M x K, or K x M when trans_a), op(B) is K x N (B is K x N, or N x K when
// trans_b), C is M x N.
template <typename T>
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
          const T* B, T beta, T* C);

#if ZEROMINI_HAVE_BF16
// bf16: tensor-core cuBLAS with float accumulation on GPUs; float GEMM on copies elsewhere.
template <>
void gemm<bf16>(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, bf16 alpha,
                const bf16* A, const bf16* B, bf16 beta, bf16* C);
#endif

// out (N,OC) = inp (N,C) * weight^T + bias; weight (OC,C) as PyTorch's nn.Linear; bias (OC) or
// nullptr.
template <typename T>
void matmul_forward(T* out, const T* inp, const T* weight, const T* bias, int64_t N, int64_t C,
                    int64_t OC);

// dinp (N,C) += dout * weight; dweight (OC,C) += dout^T * inp; dbias (OC) += column sums of dout
// (fixed order). dbias may be nullptr (no bias); dinp may be nullptr (input needs no gradient).
template <typename T>
void matmul_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                     int64_t N, int64_t C, int64_t OC);

// TF32 tensor-core math for float GEMMs (train.precision = "tf32"); a no-op where the GEMMs do
// not run on cuBLAS. Process-wide: it sets the math mode of Kokkos Kernels' cuBLAS handle.
void set_tf32_gemms(bool enabled);

}  // namespace zm::kernels
