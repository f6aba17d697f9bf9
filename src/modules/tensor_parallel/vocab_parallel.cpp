#include "modules/tensor_parallel/vocab_parallel.hpp"

#include "kernels/fast_math.hpp"
#include "kernels/team.hpp"

namespace zm::kernels {

template <typename T>
void encoder_forward_vocab_slice(TeamShape shape, T* out, const int* tokens, const T* wte_slice,
                                 int64_t vocab_begin, int64_t vocab_rows, const T* wpe, int64_t B,
                                 int64_t S, int64_t C) {
  using A = Acc<T>;
  Kokkos::parallel_for(
      "zeromini::encoder_forward_vocab_slice", team_policy(shape, B * S),
      KOKKOS_LAMBDA(const TeamMember& team) {
        const int64_t bt = team.league_rank();
        const int64_t row = static_cast<int64_t>(tokens[bt]) - vocab_begin;
        const T* te = row >= 0 && row < vocab_rows ? wte_slice + row * C : nullptr;
        const T* pe = wpe != nullptr ? wpe + (bt % S) * C : nullptr;
        T* o = out + bt * C;
        team_for(team, C, [&](int64_t c) {
          o[c] = T((te != nullptr ? A(te[c]) : A(0)) + (pe != nullptr ? A(pe[c]) : A(0)));
        });
      });
}

// The slice's columns that are real vocabulary.
KOKKOS_INLINE_FUNCTION int64_t real_columns(int64_t vocab_begin, int64_t V, int64_t vocab_rows) {
  const int64_t n = V - vocab_begin;
  return n < 0 ? 0 : (n > vocab_rows ? vocab_rows : n);
}

template <typename T>
void crossentropy_slice_stats(TeamShape shape, const T* logits, Acc<T>* stats, const int* targets,
                              int64_t vocab_begin, int64_t N, int64_t V, int64_t vocab_rows) {
  using A = Acc<T>;
  const int64_t n = real_columns(vocab_begin, V, vocab_rows);
  Kokkos::parallel_for(
      "zeromini::crossentropy_slice_stats", team_policy(shape, N),
      KOKKOS_LAMBDA(const TeamMember& team) {
        const int64_t i = team.league_rank();
        const T* x = logits + i * vocab_rows;
        const int64_t target = static_cast<int64_t>(targets[i]) - vocab_begin;
        A* s = stats + i * kSliceStats;
        if (n == 0) {
          team_single(team, [&] {
            s[0] = Kokkos::reduction_identity<A>::max();
            s[1] = A(0);
            s[2] = A(0);
          });
          return;
        }
        const A maximum = team_max<A>(team, x, n);
        const A total =
            team_sum<A>(team, n, [&](int64_t j) { return fast_exp(A(x[j]) - maximum); });
        team_single(team, [&] {
          s[0] = maximum;
          s[1] = total;
          s[2] = target >= 0 && target < n ? A(x[target]) : A(0);
        });
      });
}

template <typename A>
void crossentropy_combine(TeamShape shape, const A* gathered, int64_t slices, A* losses,
                          A* row_stats, int64_t N) {
  Kokkos::parallel_for(
      "zeromini::crossentropy_combine", team_policy(shape, N),
      KOKKOS_LAMBDA(const TeamMember& team) {
        const int64_t i = team.league_rank();
        team_single(team, [&] {
          A maximum = gathered[i * kSliceStats];
          for (int64_t r = 1; r < slices; ++r) {
            const A m = gathered[(r * N + i) * kSliceStats];
            maximum = m > maximum ? m : maximum;
          }
          A total = A(0), target_logit = A(0);
          for (int64_t r = 0; r < slices; ++r) {
            const A* s = gathered + (r * N + i) * kSliceStats;
            if (s[1] > A(0)) total += s[1] * fast_exp(s[0] - maximum);
            target_logit += s[2];
          }
          losses[i] = math::log(total) + maximum - target_logit;
          row_stats[2 * i] = maximum;
          row_stats[2 * i + 1] = total;
        });
      });
}

template <typename T>
void softmax_slice(TeamShape shape, T* logits_to_probs, const Acc<T>* row_stats,
                   int64_t vocab_begin, int64_t N, int64_t V, int64_t vocab_rows) {
  using A = Acc<T>;
  const int64_t n = real_columns(vocab_begin, V, vocab_rows);
  Kokkos::parallel_for(
      "zeromini::softmax_slice", team_policy(shape, N), KOKKOS_LAMBDA(const TeamMember& team) {
        const int64_t i = team.league_rank();
        T* x = logits_to_probs + i * vocab_rows;
        const A maximum = row_stats[2 * i], inverse = A(1) / row_stats[2 * i + 1];
        team_for(team, vocab_rows, [&](int64_t j) {
          x[j] = j < n ? T(fast_exp(A(x[j]) - maximum) * inverse) : T(0);
        });
      });
}

template <typename T>
void crossentropy_slice_backward(TeamShape shape, T* probs_to_dlogits, const int* targets,
                                 int64_t vocab_begin, T dloss, int64_t N, int64_t V,
                                 int64_t vocab_rows) {
  using A = Acc<T>;
  const A scale = A(dloss);
  const int64_t n = real_columns(vocab_begin, V, vocab_rows);
  Kokkos::parallel_for(
      "zeromini::crossentropy_slice_backward", team_policy(shape, N),
      KOKKOS_LAMBDA(const TeamMember& team) {
        const int64_t i = team.league_rank();
        T* p = probs_to_dlogits + i * vocab_rows;
        const int64_t target = static_cast<int64_t>(targets[i]) - vocab_begin;
        team_for(team, vocab_rows, [&](int64_t j) {
          p[j] = j < n ? T(scale * (A(p[j]) - (j == target ? A(1) : A(0)))) : T(0);
        });
      });
}

// a * b rounded on its own, as a product written to memory and read back is, even where the
// caller adds to it: compilers may fuse a product with the addition that uses it (nvcc by default,
// GCC and Clang on FMA targets) in one kernel and not in another, and two paths meant to give the
// same bits then differ in the last one. fma(a, b, +0) is that rounded product (never -0 where
// used), and compilers keep it as it is (it differs from a * b at -0).
template <typename A>
KOKKOS_INLINE_FUNCTION A rounded_product(A a, A b) {
  return math::fma(a, b, A(0));
}

template <typename T>
void crossentropy_slice_dlogits(TeamShape shape, T* logits_to_dlogits, const Acc<T>* row_stats,
                                const int* targets, int64_t vocab_begin, T dloss, int64_t N,
                                int64_t V, int64_t vocab_rows) {
  using A = Acc<T>;
  const A scale = A(dloss);
  const int64_t n = real_columns(vocab_begin, V, vocab_rows);
  Kokkos::parallel_for(
      "zeromini::crossentropy_slice_dlogits", team_policy(shape, N),
      KOKKOS_LAMBDA(const TeamMember& team) {
        const int64_t i = team.league_rank();
        T* x = logits_to_dlogits + i * vocab_rows;
        const A maximum = row_stats[2 * i], inverse = A(1) / row_stats[2 * i + 1];
        const int64_t target = static_cast<int64_t>(targets[i]) - vocab_begin;
        team_for(team, vocab_rows, [&](int64_t j) {
          // The probability rounded to T first, as softmax_slice stores it: a rounded product,
          // never one multiply-add with the subtraction below (rounded_product), which the
          // pair of kernels, reading it back from memory, cannot form.
          const A prob = A(T(rounded_product(fast_exp(A(x[j]) - maximum), inverse)));
          x[j] = j < n ? T(scale * (prob - (j == target ? A(1) : A(0)))) : T(0);
        });
      });
}

#define ZM_INSTANTIATE(T)                                                                        \
  template void encoder_forward_vocab_slice<T>(TeamShape, T*, const int*, const T*, int64_t,     \
                                               int64_t, const T*, int64_t, int64_t, int64_t);    \
  template void crossentropy_slice_stats<T>(TeamShape, const T*, Acc<T>*, const int*, int64_t,   \
                                            int64_t, int64_t, int64_t);                          \
  template void softmax_slice<T>(TeamShape, T*, const Acc<T>*, int64_t, int64_t, int64_t,        \
                                 int64_t);                                                       \
  template void crossentropy_slice_backward<T>(TeamShape, T*, const int*, int64_t, T, int64_t,   \
                                               int64_t, int64_t);                                \
  template void crossentropy_slice_dlogits<T>(TeamShape, T*, const Acc<T>*, const int*, int64_t, \
                                              T, int64_t, int64_t, int64_t);
ZM_FOR_EACH_KERNEL_REAL(ZM_INSTANTIATE)
#undef ZM_INSTANTIATE
template void crossentropy_combine<float>(TeamShape, const float*, int64_t, float*, float*,
                                          int64_t);

}  // namespace zm::kernels
