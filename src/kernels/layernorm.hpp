// LayerNorm over the last dimension, eps = 1e-5 (PyTorch's default).
#pragma once

#include <cstdint>

#include "kernels/accumulate.hpp"
#include "kernels/team_shape.hpp"

namespace zm::kernels {

constexpr float kLayerNormEps = 1e-5f;

// out = (inp - mean) * rstd * weight + bias, per row. inp, out (N,C); mean, rstd (N) saved for
// backward (rstd = 1/sqrt(var + eps), biased variance), in the arithmetic type (fp32 for bf16).
template <typename T>
void layernorm_forward(TeamShape shape, T* out, Acc<T>* mean, Acc<T>* rstd, const T* inp,
                       const T* weight, const T* bias, int64_t N, int64_t C);

// dinp, dweight, dbias += their gradients (`partials`: column_partials_size(N, C, 2) elements).
template <typename T>
void layernorm_backward(TeamShape shape, T* dinp, T* dweight, T* dbias, const T* dout, const T* inp,
                        const T* weight, const Acc<T>* mean, const Acc<T>* rstd, int64_t N,
                        int64_t C, Acc<T>* partials);

}  // namespace zm::kernels
