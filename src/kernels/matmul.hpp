// Dense layers (nn.Linear) on the GEMMs of gemm.hpp.
#pragma once

#include <cstdint>

#include "core/compat.hpp"
#include "kernels/accumulate.hpp"
#include "kernels/gemm.hpp"
#include "kernels/grad_write.hpp"
#include "kernels/team_shape.hpp"

namespace zm::kernels {

// out (N,OC) = inp (N,C) * weight^T + bias; weight (OC,C) as PyTorch's nn.Linear; bias (OC) or
// nullptr. `math`: the GEMMs' arithmetic (gemm.hpp). `ld_out`: out's rows lie ld_out elements
// apart (0: OC), out being columns of a wider output (one tile of a layer: model/gpt.cpp).
template <typename T>
void matmul_forward(TeamShape shape, T* out, const T* inp, const T* weight, const T* bias,
                    int64_t N, int64_t C, int64_t OC, GemmMath math = GemmMath::FP32,
                    int64_t ld_out = 0);

// dinp (N,C) += dout * weight; dweight (OC,C) += dout^T * inp; dbias (OC) += column sums of dout
// (through bias_partials, column_partials_size(N, OC) elements). dbias (then bias_partials too)
// and dinp may be nullptr. `ld_dout`: dout's rows lie that far apart (0: OC), as ld_out.
template <typename T>
void matmul_backward(TeamShape shape, T* dinp, T* dweight, T* dbias, const T* dout, const T* inp,
                     const T* weight, int64_t N, int64_t C, int64_t OC, Acc<T>* bias_partials,
                     GradWrite dinp_write = GradWrite::Accumulate, GemmMath math = GemmMath::FP32,
                     int64_t ld_dout = 0);

// The bias's parts of the two, alone: out (N,OC) += bias; dbias += column sums of dout.
template <typename T>
void bias_forward(TeamShape shape, T* out, const T* bias, int64_t N, int64_t OC);
template <typename T>
void bias_backward(TeamShape shape, T* dbias, const T* dout, int64_t N, int64_t OC,
                   Acc<T>* bias_partials);

}  // namespace zm::kernels
