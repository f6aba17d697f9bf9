#include "kernels/attention.hpp"

#include "kernels/gemm.hpp"
#include "kernels/softmax_row.hpp"
#include "kernels/team.hpp"

namespace zm::kernels {

// In this file S is the sequence length (T in the headers) and T the element type.
namespace {

// (B,NH,S,hd) -> rows of (B,S,row_stride) at column h*hd (added where `accumulate`).
template <typename T>
void heads_to_tokens(TeamShape shape, T* dst, const T* src, int64_t B, int64_t S, int64_t C,
                     int64_t NH, int64_t row_stride, bool accumulate) {
  const int64_t hd = C / NH;
  Kokkos::parallel_for(
      "zeromini::attention_heads_to_tokens", team_policy(shape, B * S * NH),
      KOKKOS_LAMBDA(const TeamMember& team) {
        const int64_t i = team.league_rank();
        const int64_t h = i % NH, t = (i / NH) % S, b = i / (NH * S);
        const T* s = src + ((b * NH + h) * S + t) * hd;
        T* d = dst + (b * S + t) * row_stride + h * hd;
        // Two loops rather than a test per element, which would keep them from vectorising.
        if (accumulate)
          team_for(team, hd, [&](int64_t e) { d[e] = T(Acc<T>(d[e]) + Acc<T>(s[e])); });
        else
          team_for(team, hd, [&](int64_t e) { d[e] = s[e]; });
      });
}

// Rows of Parts consecutive C-wide blocks, (B,S,Parts*C) -> Parts tensors (B,NH,S,hd), a team per
// (b, h, t): qkv's q, k and v in one pass.
template <int Parts, typename T>
void tokens_to_heads(TeamShape shape, Kokkos::Array<T*, Parts> dst, const T* src, int64_t B,
                     int64_t S, int64_t C, int64_t NH) {
  const int64_t hd = C / NH;
  Kokkos::parallel_for(
      "zeromini::attention_tokens_to_heads", team_policy(shape, B * NH * S),
      KOKKOS_LAMBDA(const TeamMember& team) {
        const int64_t row = team.league_rank();
        const int64_t t = row % S, h = (row / S) % NH, b = row / (S * NH);
        const T* s = src + (b * S + t) * Parts * C + h * hd;
        team_for(team, hd, [&](int64_t e) {
          for (int p = 0; p < Parts; ++p) dst[p][row * hd + e] = s[p * C + e];
        });
      });
}

}  // namespace

template <typename T>
void attention_forward(TeamShape shape, T* out, const AttentionSaved<T>& saved,
                       const AttentionScratch<T>& scratch, const T* qkv, int64_t B, int64_t S,
                       int64_t C, int64_t NH, GemmMath math) {
  const int64_t hd = C / NH;
  const T scale = T(Acc<T>(1) / math::sqrt(static_cast<Acc<T>>(hd)));
  tokens_to_heads<3, T>(shape, {saved.q, saved.k, saved.v}, qkv, B, S, C, NH);
  const int64_t BNH = B * NH, SS = S * S, Sd = S * hd;
  // Scores: one batched GEMM over (batch, head).
  gemm_strided_batched<T>(false, true, S, S, hd, scale, saved.q, Sd, saved.k, Sd, T(0), saved.att,
                          SS, BNH, math);
  // Causal softmax per row; entries above the diagonal become 0.
  T* att = saved.att;
  Kokkos::parallel_for(
      "zeromini::attention_softmax", team_policy(shape, B * NH * S),
      KOKKOS_LAMBDA(const TeamMember& team) {
        const int64_t row = team.league_rank();
        const int64_t t = row % S;
        T* a = att + row * S;
        team_softmax_in_place(team, a, t + 1);
        team_for(team, S - t - 1, [&](int64_t j) { a[t + 1 + j] = T(0); });
      });
  gemm_strided_batched<T>(false, false, S, hd, S, T(1), saved.att, SS, saved.v, Sd, T(0), scratch.y,
                          Sd, BNH, math);
  heads_to_tokens(shape, out, scratch.y, B, S, C, NH, C, false);
}

template <typename T>
void attention_backward(TeamShape shape, T* dqkv, const AttentionScratch<T>& scratch, const T* dout,
                        const AttentionSaved<T>& saved, int64_t B, int64_t S, int64_t C, int64_t NH,
                        GradWrite write, GemmMath math) {
  const int64_t hd = C / NH;
  const T scale = T(Acc<T>(1) / math::sqrt(static_cast<Acc<T>>(hd)));
  const int64_t BNH = B * NH, SS = S * S, Sd = S * hd;
  T* dy = scratch.y;
  tokens_to_heads<1, T>(shape, {dy}, dout, B, S, C, NH);
  gemm_strided_batched<T>(false, true, S, S, hd, T(1), dy, Sd, saved.v, Sd, T(0), scratch.datt, SS,
                          BNH, math);
  gemm_strided_batched<T>(true, false, S, hd, S, T(1), saved.att, SS, dy, Sd, T(0), scratch.dv, Sd,
                          BNH, math);
  // Softmax backward (in place on datt), with the score scale folded in.
  T* datt = scratch.datt;
  const T* att = saved.att;
  using A = Acc<T>;
  const A scale_a = A(scale);
  Kokkos::parallel_for(
      "zeromini::attention_softmax_backward", team_policy(shape, B * NH * S),
      KOKKOS_LAMBDA(const TeamMember& team) {
        const int64_t row = team.league_rank();
        const int64_t t = row % S;
        const T* a = att + row * S;
        T* d = datt + row * S;
        const A dot = team_sum<A>(team, t + 1, [&](int64_t j) { return A(a[j]) * A(d[j]); });
        // The sum synchronises the team: every read of d is done before a lane rewrites it.
        team_for(team, t + 1, [&](int64_t j) { d[j] = T(scale_a * A(a[j]) * (A(d[j]) - dot)); });
        team_for(team, S - t - 1, [&](int64_t j) { d[t + 1 + j] = T(0); });
      });
  gemm_strided_batched<T>(false, false, S, hd, S, T(1), scratch.datt, SS, saved.k, Sd, T(0),
                          scratch.dq, Sd, BNH, math);
  gemm_strided_batched<T>(true, false, S, hd, S, T(1), scratch.datt, SS, saved.q, Sd, T(0),
                          scratch.dk, Sd, BNH, math);
  // The q, k and v thirds of each row are disjoint and together cover dqkv.
  const bool accumulate = write == GradWrite::Accumulate;
  heads_to_tokens(shape, dqkv, scratch.dq, B, S, C, NH, 3 * C, accumulate);
  heads_to_tokens(shape, dqkv + C, scratch.dk, B, S, C, NH, 3 * C, accumulate);
  heads_to_tokens(shape, dqkv + 2 * C, scratch.dv, B, S, C, NH, 3 * C, accumulate);
}

#define ZM_INSTANTIATE(T)                                                                    \
  template void attention_forward<T>(TeamShape, T*, const AttentionSaved<T>&,                \
                                     const AttentionScratch<T>&, const T*, int64_t, int64_t, \
                                     int64_t, int64_t, GemmMath);                            \
  template void attention_backward<T>(TeamShape, T*, const AttentionScratch<T>&, const T*,   \
                                      const AttentionSaved<T>&, int64_t, int64_t, int64_t,   \
                                      int64_t, GradWrite, GemmMath);
ZM_FOR_EACH_KERNEL_REAL(ZM_INSTANTIATE)
#undef ZM_INSTANTIATE

}  // namespace zm::kernels
