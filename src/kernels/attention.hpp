// Causal multi-head self-attention on the output of the QKV projection.
#pragma once

#include <cstdint>

#include "core/precision.hpp"
#include "kernels/grad_write.hpp"
#include "kernels/team_shape.hpp"

namespace zm::kernels {

// Buffers the forward pass saves for backward, all in device memory.
template <typename T>
struct AttentionSaved {
  T* q;    // (B, NH, T, hd)   queries, permuted from qkv
  T* k;    // (B, NH, T, hd)
  T* v;    // (B, NH, T, hd)
  T* att;  // (B, NH, T, T)    softmax(q k^T / sqrt(hd)) with the causal mask (zeros above
           //                  the diagonal)
};

// Scratch the kernels may overwrite freely (not needed after the call returns).
template <typename T>
struct AttentionScratch {
  T* y;     // (B, NH, T, hd)
  T* datt;  // (B, NH, T, T)   backward only
  T* dq;    // (B, NH, T, hd)  backward only
  T* dk;    // (B, NH, T, hd)  backward only
  T* dv;    // (B, NH, T, hd)  backward only
};

// out (B,T,C) = attention(qkv); qkv (B,T,3C) holds per token q | k | v, head h at columns
// [h*hd, (h+1)*hd) of each third. Fills `saved`; uses scratch.y.
template <typename T>
void attention_forward(TeamShape shape, T* out, const AttentionSaved<T>& saved,
                       const AttentionScratch<T>& scratch, const T* qkv, int64_t B, int64_t S,
                       int64_t C, int64_t NH, GemmMath math = GemmMath::FP32);

// dqkv (B,T,3C) += gradient of attention_forward given dout (B,T,C) and what forward saved
// (= with GradWrite::Overwrite).
template <typename T>
void attention_backward(TeamShape shape, T* dqkv, const AttentionScratch<T>& scratch, const T* dout,
                        const AttentionSaved<T>& saved, int64_t B, int64_t S, int64_t C, int64_t NH,
                        GradWrite write = GradWrite::Accumulate, GemmMath math = GemmMath::FP32);

}  // namespace zm::kernels
