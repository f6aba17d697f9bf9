#include "kernels/elementwise.hpp"

#include "kernels/fast_math.hpp"
#include "kernels/team.hpp"

namespace zm::kernels {

template <typename T>
void gelu_forward(TeamShape shape, T* out, const T* inp, int64_t n) {
  using A = Acc<T>;
  // sqrt(2/pi) and the cubic coefficient of GPT-2's tanh GELU.
  const A scale = A(0.7978845608028654), cubic = A(0.044715);
  for_each_element(
      shape, "zeromini::gelu_forward", n, KOKKOS_LAMBDA(int64_t i) {
        const A x = A(inp[i]);
        const A u = scale * (x + cubic * x * x * x);
        out[i] = T(A(0.5) * x * (A(1) + fast_tanh(u)));
      });
}

namespace {

// gelu'(x), the local derivative of the tanh approximation.
template <typename A>
KOKKOS_INLINE_FUNCTION A gelu_derivative(A x) {
  const A scale = A(0.7978845608028654), cubic = A(0.044715);
  const A u = scale * (x + cubic * x * x * x);
  const A t = fast_tanh(u);
  const A sech2 = A(1) - t * t;
  return A(0.5) * (A(1) + t) + A(0.5) * x * sech2 * scale * (A(1) + A(3) * cubic * x * x);
}

// The sum in double of term(i) over [0, n): a team sum per chunk, the chunks' sums joined by
// Kokkos in a fixed order (team.hpp): the same bits run after run.
template <typename F>
double chunked_sum(TeamShape shape, const char* name, int64_t n, const F& term) {
  double total = 0.0;
  if (n <= 0) return total;
  const int64_t chunks = (n + kElementChunk - 1) / kElementChunk;
  Kokkos::parallel_reduce(
      name, team_policy(shape, chunks),
      KOKKOS_LAMBDA(const TeamMember& team, double& acc) {
        const F f = term;
        const int64_t begin = team.league_rank() * kElementChunk;
        const int64_t count = begin + kElementChunk < n ? kElementChunk : n - begin;
        const double part = team_sum<double>(team, count, [&](int64_t i) { return f(begin + i); });
        team_single(team, [&] { acc += part; });
      },
      total);
  return total;
}

}  // namespace

template <typename T>
void gelu_backward(TeamShape shape, T* dinp, const T* inp, const T* dout, int64_t n,
                   GradWrite write) {
  using A = Acc<T>;
  // Two loops rather than a test per element, which keeps the compiler from vectorising.
  if (write == GradWrite::Accumulate)
    for_each_element(
        shape, "zeromini::gelu_backward_accumulate", n, KOKKOS_LAMBDA(int64_t i) {
          dinp[i] = T(A(dinp[i]) + gelu_derivative(A(inp[i])) * A(dout[i]));
        });
  else
    for_each_element(
        shape, "zeromini::gelu_backward_overwrite", n,
        KOKKOS_LAMBDA(int64_t i) { dinp[i] = T(A(0) + gelu_derivative(A(inp[i])) * A(dout[i])); });
}

template <typename T>
void residual_forward(TeamShape shape, T* out, const T* a, const T* b, int64_t n) {
  using A = Acc<T>;
  for_each_element(
      shape, "zeromini::residual_forward", n,
      KOKKOS_LAMBDA(int64_t i) { out[i] = T(A(a[i]) + A(b[i])); });
}

template <typename T>
void fill(TeamShape shape, T* x, int64_t n, T value) {
  for_each_element(
      shape, "zeromini::fill", n, KOKKOS_LAMBDA(int64_t i) { x[i] = value; });
}

template <typename T>
void copy(TeamShape shape, T* dst, const T* src, int64_t n) {
  for_each_element(
      shape, "zeromini::copy", n, KOKKOS_LAMBDA(int64_t i) { dst[i] = src[i]; });
}

template <typename T>
void add_into(TeamShape shape, T* y, const T* x, int64_t n) {
  using A = Acc<T>;
  for_each_element(
      shape, "zeromini::add_into", n, KOKKOS_LAMBDA(int64_t i) { y[i] = T(A(y[i]) + A(x[i])); });
}

template <typename T>
void residual_of(TeamShape shape, T* e, const T* x, int64_t n) {
  using A = Acc<T>;
  for_each_element(
      shape, "zeromini::residual_of", n, KOKKOS_LAMBDA(int64_t i) { e[i] = T(A(x[i]) - A(e[i])); });
}

template <typename T>
void accumulate_gradient(TeamShape shape, Acc<T>* sum, const T* x, T* out, int64_t n, bool first) {
  using A = Acc<T>;
  for_each_element(
      shape, "zeromini::accumulate_gradient", n, KOKKOS_LAMBDA(int64_t i) {
        const A total = first ? A(x[i]) : sum[i] + A(x[i]);
        sum[i] = total;
        if (out) out[i] = T(total);
      });
}

template <typename T>
double sum_of_squares(TeamShape shape, const T* x, int64_t n) {
  return chunked_sum(
      shape, "zeromini::sum_of_squares", n, KOKKOS_LAMBDA(int64_t i) {
        const double v = static_cast<double>(Acc<T>(x[i]));
        return v * v;
      });
}

template <typename T>
double sum(TeamShape shape, const T* x, int64_t n) {
  return chunked_sum(
      shape, "zeromini::sum", n,
      KOKKOS_LAMBDA(int64_t i) { return static_cast<double>(Acc<T>(x[i])); });
}

template <typename From, typename To>
void convert(TeamShape shape, To* dst, const From* src, int64_t n) {
  using A = Acc<From>;
  for_each_element(
      shape, "zeromini::convert", n, KOKKOS_LAMBDA(int64_t i) { dst[i] = To(A(src[i])); });
}

#define ZM_INSTANTIATE(T)                                                                \
  template void gelu_forward<T>(TeamShape, T*, const T*, int64_t);                       \
  template void gelu_backward<T>(TeamShape, T*, const T*, const T*, int64_t, GradWrite); \
  template void residual_forward<T>(TeamShape, T*, const T*, const T*, int64_t);         \
  template void fill<T>(TeamShape, T*, int64_t, T);                                      \
  template void copy<T>(TeamShape, T*, const T*, int64_t);                               \
  template void add_into<T>(TeamShape, T*, const T*, int64_t);                           \
  template void residual_of<T>(TeamShape, T*, const T*, int64_t);                        \
  template void accumulate_gradient<T>(TeamShape, Acc<T>*, const T*, T*, int64_t, bool); \
  template double sum_of_squares<T>(TeamShape, const T*, int64_t);                       \
  template double sum<T>(TeamShape, const T*, int64_t);
ZM_FOR_EACH_KERNEL_REAL(ZM_INSTANTIATE)
// fp32 masters kept apart from fp32 parameters (a master in host memory).
template void convert<float, float>(TeamShape, float*, const float*, int64_t);
#if ZEROMINI_HAVE_BF16
template void convert<float, bf16>(TeamShape, bf16*, const float*, int64_t);
template void convert<bf16, float>(TeamShape, float*, const bf16*, int64_t);
#endif
#undef ZM_INSTANTIATE

}  // namespace zm::kernels
