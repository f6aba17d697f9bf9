// GEMMs on the host: the BLAS behind Kokkos Kernels, called on blocks of output rows, one
// contiguous block per Kokkos host thread. A threaded BLAS would cut C by columns, while the
// kernels around it give each thread a contiguous block of rows (static schedules): rows then
// stay on one core, and a batch of small GEMMs (attention's) is spread over the threads whole.
// Inside the parallel region the BLAS runs sequentially.
#include "kernels/gemm_backend.hpp"

#if ZEROMINI_GEMM_HOST_BLAS

#include <KokkosBlas_Host_tpl.hpp>

#include "core/sequential_blas.hpp"

namespace zm::kernels::detail {

namespace {

using HostExec = Kokkos::DefaultHostExecutionSpace;
using OnePerThread = Kokkos::RangePolicy<HostExec, Kokkos::Schedule<Kokkos::Static>>;

// Row blocks start at multiples of this (a whole number of the BLAS micro-kernel's tiles).
constexpr int64_t kRowAlign = 8;

// Rows [m0, m1) of one row-major GEMM: column-major C^T = op(B)^T op(A)^T, B first.
template <typename T>
void gemm_rows(const GemmShape& s, int64_t m0, int64_t m1, T alpha, const T* A, const T* B, T beta,
               T* C) {
  const T* a_rows = s.trans_a ? A + m0 : A + m0 * s.lda();
  KokkosBlas::Impl::HostBlas<T>::gemm(
      s.trans_b ? 'T' : 'N', s.trans_a ? 'T' : 'N', static_cast<int>(s.N),
      static_cast<int>(m1 - m0), static_cast<int>(s.K), alpha, B, static_cast<int>(s.ldb()), a_rows,
      static_cast<int>(s.lda()), beta, C + m0 * s.ldc(), static_cast<int>(s.ldc()));
}

// Where part `part` of `parts` starts among `rows` rows: equal shares, aligned.
int64_t part_start(int64_t rows, int part, int parts) {
  if (part >= parts) return rows;
  const int64_t start = rows * part / parts / kRowAlign * kRowAlign;
  return start < rows ? start : rows;
}

// Rows [r0, r1) of the batch seen as one matrix of batch * M rows: a BLAS call per matrix.
template <typename T>
void gemm_row_range(const GemmShape& s, int64_t r0, int64_t r1, T alpha, const T* A,
                    int64_t stride_a, const T* B, int64_t stride_b, T beta, T* C,
                    int64_t stride_c) {
  while (r0 < r1) {
    const int64_t i = r0 / s.M, m0 = r0 % s.M;
    const int64_t m1 = m0 + (r1 - r0) < s.M ? m0 + (r1 - r0) : s.M;
    gemm_rows(s, m0, m1, alpha, A + i * stride_a, B + i * stride_b, beta, C + i * stride_c);
    r0 += m1 - m0;
  }
}

}  // namespace

template <typename T>
void gemm_backend(const GemmShape& s, T alpha, const T* A, int64_t stride_a, const T* B,
                  int64_t stride_b, T beta, T* C, int64_t stride_c, int64_t batch) {
  const int parts = HostExec().concurrency();
  const int64_t rows = batch * s.M;
  if (parts == 1) {
    gemm_row_range(s, 0, rows, alpha, A, stride_a, B, stride_b, beta, C, stride_c);
    return;
  }
  static const bool sequential_blas = (make_blas_calls_sequential(), true);
  (void)sequential_blas;
  // One iteration per thread: thread p gets part p, the rows the kernels around it give it.
  Kokkos::parallel_for("zeromini::gemm_row_blocks", OnePerThread(0, parts), [=](int part) {
    gemm_row_range(s, part_start(rows, part, parts), part_start(rows, part + 1, parts), alpha, A,
                   stride_a, B, stride_b, beta, C, stride_c);
  });
}

ZM_INSTANTIATE_GEMM_BACKEND(float)
ZM_INSTANTIATE_GEMM_BACKEND(double)

}  // namespace zm::kernels::detail

#endif  // ZEROMINI_GEMM_HOST_BLAS
