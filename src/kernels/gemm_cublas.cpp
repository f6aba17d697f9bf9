// GEMMs on NVIDIA GPUs: cuBLAS on Kokkos Kernels' handle and stream, called directly (Kokkos
// Kernels has no bf16 or strided-batched GEMM). bf16 accumulates in float; float runs in fp32 or,
// where the shape's math says so, on TF32 tensor cores.
#include "kernels/gemm_backend.hpp"

#if ZEROMINI_GEMM_CUBLAS

#include <KokkosBlas_tpl_spec.hpp>

#include "kernels/accumulate.hpp"

namespace zm::kernels {

namespace {

cublasHandle_t cublas_handle() {
  cublasHandle_t handle = KokkosBlas::Impl::CudaBlasSingleton::singleton().handle;
  cublasSetStream(handle, ExecSpace().cuda_stream());
  return handle;
}

template <typename T>
struct CublasTypes;
template <>
struct CublasTypes<float> {
  static constexpr cudaDataType data = CUDA_R_32F;
  static cublasComputeType_t compute(GemmMath math) {
    return math == GemmMath::TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  }
};
template <>
struct CublasTypes<double> {
  static constexpr cudaDataType data = CUDA_R_64F;
  static cublasComputeType_t compute(GemmMath) { return CUBLAS_COMPUTE_64F; }
};
#if ZEROMINI_HAVE_BF16
template <>
struct CublasTypes<bf16> {
  static constexpr cudaDataType data = CUDA_R_16BF;
  static cublasComputeType_t compute(GemmMath) { return CUBLAS_COMPUTE_32F; }
};
#endif

}  // namespace

namespace detail {

// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: B first, dimensions N, M.
template <typename T>
void gemm_backend(const GemmShape& s, T alpha, const T* A, int64_t stride_a, const T* B,
                  int64_t stride_b, T beta, T* C, int64_t stride_c, int64_t batch) {
  using Scale = Acc<T>;
  using Types = CublasTypes<T>;
  const Scale a = Scale(alpha), b = Scale(beta);
  const cublasOperation_t op_b = s.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = s.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int n = static_cast<int>(s.N), m = static_cast<int>(s.M), k = static_cast<int>(s.K);
  const int ldb = static_cast<int>(s.ldb()), lda = static_cast<int>(s.lda());
  const int ldc = static_cast<int>(s.ldc());
  cublasStatus_t status;
  if (batch == 1)
    status =
        cublasGemmEx(cublas_handle(), op_b, op_a, n, m, k, &a, B, Types::data, ldb, A, Types::data,
                     lda, &b, C, Types::data, ldc, Types::compute(s.math), CUBLAS_GEMM_DEFAULT);
  else
    status = cublasGemmStridedBatchedEx(cublas_handle(), op_b, op_a, n, m, k, &a, B, Types::data,
                                        ldb, stride_b, A, Types::data, lda, stride_a, &b, C,
                                        Types::data, ldc, stride_c, static_cast<int>(batch),
                                        Types::compute(s.math), CUBLAS_GEMM_DEFAULT);
  if (status != CUBLAS_STATUS_SUCCESS) Kokkos::abort("zeromini: cuBLAS GEMM failed");
}

ZM_FOR_EACH_KERNEL_REAL(ZM_INSTANTIATE_GEMM_BACKEND)

}  // namespace detail

}  // namespace zm::kernels

#endif  // ZEROMINI_GEMM_CUBLAS
