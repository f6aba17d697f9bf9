// The vocabulary-parallel embedding and cross-entropy of tensor parallelism (Megatron's
// VocabParallelEmbedding and vocab_parallel_cross_entropy): each tensor-parallel rank holds the
// rows [vocab_begin, vocab_begin + vocab_rows) of wte, the matching columns of the logits, and
// never the whole N x Vp. The scheme (megatron.cpp) sums the embedding over the ranks and gathers
// the cross-entropy's per-row statistics.
#pragma once

#include <cstdint>

#include "kernels/accumulate.hpp"
#include "kernels/team_shape.hpp"

namespace zm::kernels {

// out[b,t,:] = (tokens[b,t] in this slice ? wte_slice[tokens[b,t] - vocab_begin,:] : 0)
//              + (wpe ? wpe[t,:] : 0).
// Summed over the ranks (one of which passes wpe) this is encoder_forward, exactly: every other
// term is zero.
template <typename T>
void encoder_forward_vocab_slice(TeamShape shape, T* out, const int* tokens, const T* wte_slice,
                                 int64_t vocab_begin, int64_t vocab_rows, const T* wpe, int64_t B,
                                 int64_t S, int64_t C);

// Per row of the logits slice (N, vocab_rows), over its columns that are real vocabulary
// (global column < V): stats[i] = {max, sum of exp(x - max), the target's logit or 0 where the
// target is another slice's}. A slice of padding only gives {-inf, 0, 0}.
constexpr int64_t kSliceStats = 3;
template <typename T>
void crossentropy_slice_stats(TeamShape shape, const T* logits, Acc<T>* stats, const int* targets,
                              int64_t vocab_begin, int64_t N, int64_t V, int64_t vocab_rows);

// From every slice's stats (gathered: slices x N x kSliceStats, in rank order), combined in that
// fixed order: losses[i] = log-sum-exp of the whole row - its target's logit, and
// row_stats[i] = {max, sum of exp(x - max)} of the whole row.
template <typename A>
void crossentropy_combine(TeamShape shape, const A* gathered, int64_t slices, A* losses,
                          A* row_stats, int64_t N);

// In place: the logits slice becomes its part of the softmax of the whole row (row_stats), with
// 0 in the padding columns.
template <typename T>
void softmax_slice(TeamShape shape, T* logits_to_probs, const Acc<T>* row_stats,
                   int64_t vocab_begin, int64_t N, int64_t V, int64_t vocab_rows);

// In place: probabilities become dloss * (probs - onehot(target)) in the slice (0 in padding).
template <typename T>
void crossentropy_slice_backward(TeamShape shape, T* probs_to_dlogits, const int* targets,
                                 int64_t vocab_begin, T dloss, int64_t N, int64_t V,
                                 int64_t vocab_rows);

// softmax_slice and crossentropy_slice_backward in one pass (the LM head's chunks): in place,
// the logits slice becomes dloss * (its part of the whole row's softmax - onehot(target)), 0 in
// the padding columns; bitwise what the two kernels give.
template <typename T>
void crossentropy_slice_dlogits(TeamShape shape, T* logits_to_dlogits, const Acc<T>* row_stats,
                                const int* targets, int64_t vocab_begin, T dloss, int64_t N,
                                int64_t V, int64_t vocab_rows);

}  // namespace zm::kernels
