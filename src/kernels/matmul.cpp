#include "kernels/matmul.hpp"

#include <KokkosBlas3_gemm.hpp>

#if defined(KOKKOSKERNELS_ENABLE_TPL_CUBLAS)
#include <KokkosBlas_tpl_spec.hpp>
#endif

#include "kernels/common.hpp"
#include "kernels/elementwise.hpp"

namespace zm::kernels {

namespace {

using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
// Row-major matrices over raw device pointers. LayoutRight unmanaged views in the default memory
// space are what Kokkos Kernels hands to the BLAS/cuBLAS TPL.
template <typename T>
using ConstMatrix = Kokkos::View<const T**, Kokkos::LayoutRight, MemSpace, Unmanaged>;
template <typename T>
using Matrix = Kokkos::View<T**, Kokkos::LayoutRight, MemSpace, Unmanaged>;

}  // namespace

template <typename T>
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
          const T* B, T beta, T* C) {
  if (M == 0 || N == 0) return;
  const ConstMatrix<T> a(A, trans_a ? K : M, trans_a ? M : K);
  const ConstMatrix<T> b(B, trans_b ? N : K, trans_b ? K : N);
  const Matrix<T> c(C, M, N);
  KokkosBlas::gemm(trans_a ? "T" : "N", trans_b ? "T" : "N", alpha, a, b, beta, c);
}

#if ZEROMINI_HAVE_BF16
// bf16 GEMMs: on a GPU, cuBLAS on tensor cores with bf16 inputs and float accumulation (Kokkos
// Kernels has no bf16 GEMM to dispatch to); elsewhere (host tests of the bf16 path), the float
// GEMM on converted copies.
template <>
void gemm<bf16>(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, bf16 alpha,
                const bf16* A, const bf16* B, bf16 beta, bf16* C) {
  if (M == 0 || N == 0) return;
#if defined(KOKKOSKERNELS_ENABLE_TPL_CUBLAS)
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T.
  cublasHandle_t handle = KokkosBlas::Impl::CudaBlasSingleton::singleton().handle;
  cublasSetStream(handle, ExecSpace().cuda_stream());
  const float a = float(alpha), b = float(beta);
  const cublasStatus_t status = cublasGemmEx(
      handle, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
      static_cast<int>(N), static_cast<int>(M), static_cast<int>(K), &a, B, CUDA_R_16BF,
      static_cast<int>(trans_b ? K : N), A, CUDA_R_16BF, static_cast<int>(trans_a ? M : K), &b, C,
      CUDA_R_16BF, static_cast<int>(N), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (status != CUBLAS_STATUS_SUCCESS) Kokkos::abort("zeromini: cublasGemmEx (bf16) failed");
#else
  Kokkos::View<float*, MemSpace> a("gemm_a", static_cast<size_t>(M * K)),
      b("gemm_b", static_cast<size_t>(K * N)), c("gemm_c", static_cast<size_t>(M * N));
  convert<bf16, float>(a.data(), A, M * K);
  convert<bf16, float>(b.data(), B, K * N);
  if (float(beta) != 0.0f) convert<bf16, float>(c.data(), C, M * N);
  gemm<float>(trans_a, trans_b, M, N, K, float(alpha), a.data(), b.data(), float(beta), c.data());
  convert<float, bf16>(C, c.data(), M * N);
#endif
}
#endif

template <typename T>
void matmul_forward(T* out, const T* inp, const T* weight, const T* bias, int64_t N, int64_t C,
                    int64_t OC) {
  using A = Acc<T>;
  gemm<T>(false, true, N, OC, C, T(1), inp, weight, T(0), out);
  if (!bias) return;
  Kokkos::parallel_for(
      "matmul_forward_bias", RangePolicy(0, N), KOKKOS_LAMBDA(int64_t i) {
        T* o = out + i * OC;
        for (int64_t j = 0; j < OC; ++j) o[j] = T(A(o[j]) + A(bias[j]));
      });
}

template <typename T>
void matmul_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                     int64_t N, int64_t C, int64_t OC) {
  if (dinp) gemm<T>(false, false, N, C, OC, T(1), dout, weight, T(1), dinp);
  gemm<T>(true, false, OC, C, N, T(1), dout, inp, T(1), dweight);
  if (!dbias) return;
  // Column sums in a fixed row order in the arithmetic type, parallel over blocks of output
  // channels, added to the gradient once.
  using A = Acc<T>;
  const int64_t blocks = channel_blocks(OC);
  Kokkos::parallel_for(
      "matmul_backward_bias", RangePolicy(0, blocks), KOKKOS_LAMBDA(int64_t block) {
        const int64_t j0 = block * kChannelBlock;
        const int64_t j1 = j0 + kChannelBlock < OC ? j0 + kChannelBlock : OC;
        A sums[kChannelBlock];
        for (int64_t j = j0; j < j1; ++j) sums[j - j0] = A(0);
        for (int64_t i = 0; i < N; ++i) {
          const T* d = dout + i * OC;
          for (int64_t j = j0; j < j1; ++j) sums[j - j0] += A(d[j]);
        }
        for (int64_t j = j0; j < j1; ++j) dbias[j] = T(A(dbias[j]) + sums[j - j0]);
      });
}

void set_tf32_gemms(bool enabled) {
#if defined(KOKKOSKERNELS_ENABLE_TPL_CUBLAS)
  cublasHandle_t handle = KokkosBlas::Impl::CudaBlasSingleton::singleton().handle;
  cublasSetMathMode(handle, enabled ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
#else
  (void)enabled;
#endif
}

#define ZM_INSTANTIATE(T)                                                                       \
  template void gemm<T>(bool, bool, int64_t, int64_t, int64_t, T, const T*, const T*, T, T*);   \
  template void matmul_forward<T>(T*, const T*, const T*, const T*, int64_t, int64_t, int64_t); \
  template void matmul_backward<T>(T*, T*, T*, const T*, const T*, const T*, int64_t, int64_t,  \
                                   int64_t);
ZM_INSTANTIATE(float)
ZM_INSTANTIATE(double)
#if ZEROMINI_HAVE_BF16
template void matmul_forward<bf16>(bf16*, const bf16*, const bf16*, const bf16*, int64_t, int64_t,
                                   int64_t);
template void matmul_backward<bf16>(bf16*, bf16*, bf16*, const bf16*, const bf16*, const bf16*,
                                    int64_t, int64_t, int64_t);
#endif
#undef ZM_INSTANTIATE

}  // namespace zm::kernels
