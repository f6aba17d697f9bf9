#include "kernels/gemm.hpp"

#include "kernels/accumulate.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/gemm_backend.hpp"
#include "kernels/team.hpp"

namespace zm::kernels {

namespace detail {

#if ZEROMINI_HAVE_BF16 && !ZEROMINI_GEMM_CUBLAS
// bf16 off the GPU (host tests of the bf16 path): the float GEMM on converted copies.
template <>
void gemm_backend<bf16>(const GemmShape& s, bf16 alpha, const bf16* A, int64_t stride_a,
                        const bf16* B, int64_t stride_b, bf16 beta, bf16* C, int64_t stride_c,
                        int64_t batch) {
  // The spans the matrices cover, rows ld apart (between them, columns of wider matrices).
  const int64_t size_a =
      (batch - 1) * stride_a + ((s.trans_a ? s.K : s.M) - 1) * s.lda() + (s.trans_a ? s.M : s.K);
  const int64_t size_b = (batch - 1) * stride_b + s.K * s.N;
  const int64_t size_c = (batch - 1) * stride_c + (s.M - 1) * s.ldc() + s.N;
  Kokkos::View<float*, MemSpace> a("gemm_a", static_cast<size_t>(size_a)),
      b("gemm_b", static_cast<size_t>(size_b)), c("gemm_c", static_cast<size_t>(size_c));
  // Element-wise copies: the backend's default teams (a GEMM call carries no team shape).
  constexpr TeamShape shape = kDefaultTeamShape;
  convert<bf16, float>(shape, a.data(), A, size_a);
  convert<bf16, float>(shape, b.data(), B, size_b);
  // C's span is written back whole: with columns of other matrices in it, they go through too.
  if (float(beta) != 0.0f || s.ldc() != s.N) convert<bf16, float>(shape, c.data(), C, size_c);
  gemm_backend<float>(s, float(alpha), a.data(), stride_a, b.data(), stride_b, float(beta),
                      c.data(), stride_c, batch);
  convert<float, bf16>(shape, C, c.data(), size_c);
}
#endif

template <typename T>
void gemm_without_terms(const GemmShape& s, T beta, T* C, int64_t stride_c, int64_t batch) {
  using A = Acc<T>;
  // Matrices that share C (stride 0) are one: scaling it once per matrix would race.
  const int64_t matrices = stride_c == 0 ? 1 : batch, M = s.M, N = s.N, ldc = s.ldc();
  const bool zero = A(beta) == A(0);
  // A GEMM call carries no team shape: the backend's default teams, a team per row of C.
  Kokkos::parallel_for(
      "zeromini::gemm_without_terms", team_policy(kDefaultTeamShape, matrices * M),
      KOKKOS_LAMBDA(const TeamMember& team) {
        const int64_t i = team.league_rank() / M, m = team.league_rank() % M;
        T* row = C + i * stride_c + m * ldc;
        // Zeros written, not beta * C: 0 * NaN or 0 * inf would not give them.
        if (zero)
          team_for(team, N, [&](int64_t n) { row[n] = T(A(0)); });
        else
          team_for(team, N, [&](int64_t n) { row[n] = T(A(beta) * A(row[n])); });
      });
}

#define ZM_INSTANTIATE(T) \
  template void gemm_without_terms<T>(const GemmShape&, T, T*, int64_t, int64_t);
ZM_FOR_EACH_KERNEL_REAL(ZM_INSTANTIATE)
#undef ZM_INSTANTIATE

}  // namespace detail

template <typename T>
void gemm_strided_batched(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha,
                          const T* A, int64_t stride_a, const T* B, int64_t stride_b, T beta, T* C,
                          int64_t stride_c, int64_t batch, GemmMath math, LeadingDims ld) {
  if (M == 0 || N == 0 || batch == 0) return;
  const detail::GemmShape shape{trans_a, trans_b, M, N, K, math, ld.a, ld.c};
  if (K == 0) return detail::gemm_without_terms(shape, beta, C, stride_c, batch);
  detail::gemm_backend(shape, alpha, A, stride_a, B, stride_b, beta, C, stride_c, batch);
}

#define ZM_INSTANTIATE(T)                                                                    \
  template void gemm_strided_batched<T>(bool, bool, int64_t, int64_t, int64_t, T, const T*,  \
                                        int64_t, const T*, int64_t, T, T*, int64_t, int64_t, \
                                        GemmMath, LeadingDims);
ZM_FOR_EACH_KERNEL_REAL(ZM_INSTANTIATE)
#undef ZM_INSTANTIATE

}  // namespace zm::kernels
