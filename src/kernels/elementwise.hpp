// Element-wise kernels, for float, double and bf16 (computed in float).
#pragma once

#include <cstdint>

#include "kernels/accumulate.hpp"
#include "kernels/grad_write.hpp"
#include "kernels/team_shape.hpp"

namespace zm::kernels {

// GELU, tanh approximation (GPT-2; PyTorch's approximate="tanh").
template <typename T>
void gelu_forward(TeamShape shape, T* out, const T* inp, int64_t n);
// dinp += gelu'(inp) * dout (= with GradWrite::Overwrite).
template <typename T>
void gelu_backward(TeamShape shape, T* dinp, const T* inp, const T* dout, int64_t n,
                   GradWrite write = GradWrite::Accumulate);

// out = a + b.
template <typename T>
void residual_forward(TeamShape shape, T* out, const T* a, const T* b, int64_t n);

template <typename T>
void fill(TeamShape shape, T* x, int64_t n, T value);
template <typename T>
void copy(TeamShape shape, T* dst, const T* src, int64_t n);
// e[i] = x[i] - e[i]: what a lossy copy e of x (a quantization's dequantized values) missed.
template <typename T>
void residual_of(TeamShape shape, T* e, const T* x, int64_t n);
// y += x.
template <typename T>
void add_into(TeamShape shape, T* y, const T* x, int64_t n);
// Gradient accumulation over micro-steps in the arithmetic type: sum = x when `first`, else
// sum += x; then, when `out` is given, out = sum rounded to T (out may be x).
template <typename T>
void accumulate_gradient(TeamShape shape, Acc<T>* sum, const T* x, T* out, int64_t n, bool first);
// Sums (of squares) accumulated in double; deterministic.
template <typename T>
double sum_of_squares(TeamShape shape, const T* x, int64_t n);
template <typename T>
double sum(TeamShape shape, const T* x, int64_t n);

// dst = src converted element by element.
template <typename From, typename To>
void convert(TeamShape shape, To* dst, const From* src, int64_t n);

}  // namespace zm::kernels
