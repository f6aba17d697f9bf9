// Kokkos Kernels' own GEMM, a second implementation that test_gemm compares with the build's
// backend (cuBLAS or the host BLAS, kernels/gemm_backend.hpp): one GEMM through KokkosBlas::gemm,
// and a batch as one kernel, a team per matrix (KokkosBatched::TeamGemm).
#pragma once

#include <KokkosBatched_Gemm_Decl.hpp>
#include <KokkosBlas3_gemm.hpp>

#include "kernels/gemm_backend.hpp"
#include "kernels/team.hpp"

namespace zm::testing {

using zm::kernels::detail::GemmShape;

namespace gemm_kokkos_detail {

using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
template <typename T>
using ConstMatrix = Kokkos::View<const T**, Kokkos::LayoutRight, MemSpace, Unmanaged>;
template <typename T>
using Matrix = Kokkos::View<T**, Kokkos::LayoutRight, MemSpace, Unmanaged>;
using BatchPolicy = Kokkos::TeamPolicy<ExecSpace>;

template <typename TransA, typename TransB, typename T>
void team_gemms(const GemmShape& s, T alpha, const T* A, int64_t stride_a, const T* B,
                int64_t stride_b, T beta, T* C, int64_t stride_c, int64_t batch) {
  const int64_t a_rows = s.trans_a ? s.K : s.M, a_cols = s.trans_a ? s.M : s.K;
  const int64_t b_rows = s.trans_b ? s.N : s.K, b_cols = s.trans_b ? s.K : s.N;
  const int64_t M = s.M, N = s.N;
  Kokkos::parallel_for(
      "zeromini::gemm_team_batched", BatchPolicy(static_cast<int>(batch), Kokkos::AUTO),
      KOKKOS_LAMBDA(const BatchPolicy::member_type& team) {
        const int64_t i = team.league_rank();
        const ConstMatrix<T> a(A + i * stride_a, a_rows, a_cols);
        const ConstMatrix<T> b(B + i * stride_b, b_rows, b_cols);
        const Matrix<T> c(C + i * stride_c, M, N);
        KokkosBatched::TeamGemm<BatchPolicy::member_type, TransA, TransB,
                                KokkosBatched::Algo::Gemm::Unblocked>::invoke(team, alpha, a, b,
                                                                              beta, c);
      });
}

}  // namespace gemm_kokkos_detail

template <typename T>
void gemm_kokkos(const GemmShape& s, T alpha, const T* A, int64_t stride_a, const T* B,
                 int64_t stride_b, T beta, T* C, int64_t stride_c, int64_t batch) {
  using KokkosBatched::Trans;
  using namespace gemm_kokkos_detail;
  if (s.M == 0 || s.N == 0 || batch == 0) return;
  if (s.K == 0) return kernels::detail::gemm_without_terms(s, beta, C, stride_c, batch);
  if (batch == 1) {
    const ConstMatrix<T> a(A, s.trans_a ? s.K : s.M, s.trans_a ? s.M : s.K);
    const ConstMatrix<T> b(B, s.trans_b ? s.N : s.K, s.trans_b ? s.K : s.N);
    KokkosBlas::gemm(s.trans_a ? "T" : "N", s.trans_b ? "T" : "N", alpha, a, b, beta,
                     Matrix<T>(C, s.M, s.N));
  } else if (!s.trans_a && !s.trans_b) {
    team_gemms<Trans::NoTranspose, Trans::NoTranspose>(s, alpha, A, stride_a, B, stride_b, beta, C,
                                                       stride_c, batch);
  } else if (!s.trans_a) {
    team_gemms<Trans::NoTranspose, Trans::Transpose>(s, alpha, A, stride_a, B, stride_b, beta, C,
                                                     stride_c, batch);
  } else if (!s.trans_b) {
    team_gemms<Trans::Transpose, Trans::NoTranspose>(s, alpha, A, stride_a, B, stride_b, beta, C,
                                                     stride_c, batch);
  } else {
    team_gemms<Trans::Transpose, Trans::Transpose>(s, alpha, A, stride_a, B, stride_b, beta, C,
                                                   stride_c, batch);
  }
}

}  // namespace zm::testing
