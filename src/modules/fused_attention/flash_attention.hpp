// Fused causal multi-head self-attention (the FlashAttention algorithm): the same function as
// kernels/attention.hpp without the (B, NH, T, T) score and probability matrices.
//
// A team per (batch, head, tile of queries) runs over the tiles of keys and values up to the
// diagonal (the tiles above it are skipped), each copied into the team's scratch, with an online
// softmax: a running maximum and sum per query row rescale the output accumulated so far. Forward
// saves each row's log-sum-exp; backward recomputes the probabilities tile by tile from it. In GPU
// teams dQ is made by a team per query tile, dK and dV by a second pass with a team per key tile
// that runs over the query tiles in order; teams of one host thread make all three in one pass
// per (batch, head). Either way every gradient element is summed by one thread, in a fixed order,
// with no atomics: the same bits run after run at a given team shape, whatever the number of
// threads. Computed in Acc<T> (float under bf16).
#pragma once

#include <cstdint>

#include "kernels/accumulate.hpp"
#include "kernels/grad_write.hpp"
#include "kernels/team_shape.hpp"

namespace zm::kernels {

// What the forward pass saves for backward, in device memory.
template <typename T>
struct FlashAttentionSaved {
  T* q;         // (B, NH, T, hd)  queries, permuted from qkv
  T* k;         // (B, NH, T, hd)
  T* v;         // (B, NH, T, hd)
  Acc<T>* lse;  // (B, NH, T)      log of the sum of exp(q k^T / sqrt(hd)) over each causal row
};

// out (B,T,C) = attention(qkv); qkv (B,T,3C) holds per token q | k | v, head h at columns
// [h*hd, (h+1)*hd) of each third (as attention_forward). Fills `saved`.
//
// Tiles are chosen at run time from the team scratch the device gives (flash_plan.hpp);
// `max_tile` > 0 caps their rows. Forward's output and log-sum-exp depend on the tiles by rounding
// only (the online softmax rescales at each tile). Backward's gradients, given what forward saved,
// do not depend on them: each is one running sum over keys or queries in ascending order, each
// term made by the same code at any tile size in teams of several threads (a GPU's), and on the
// host at sizes that are multiples of its vector width (the plans' are), where a tile's columns
// split the same way between vector blocks and the plain loop of its ragged end.
template <typename T>
void flash_attention_forward(TeamShape shape, T* out, const FlashAttentionSaved<T>& saved,
                             const T* qkv, int64_t B, int64_t S, int64_t C, int64_t NH,
                             int64_t max_tile = 0);

// dqkv (B,T,3C) += the gradient of flash_attention_forward given dout (B,T,C), the forward's
// output `out` and what it saved (= with GradWrite::Overwrite). `delta` (B, NH, T) is scratch:
// each row's dout . out.
template <typename T>
void flash_attention_backward(TeamShape shape, T* dqkv, Acc<T>* delta, const T* dout, const T* out,
                              const FlashAttentionSaved<T>& saved, int64_t B, int64_t S, int64_t C,
                              int64_t NH, GradWrite write = GradWrite::Accumulate,
                              int64_t max_tile = 0);

}  // namespace zm::kernels
