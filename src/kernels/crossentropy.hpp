// Softmax + cross-entropy over the real vocabulary of padded logits.
#pragma once

#include <cstdint>

#include "kernels/accumulate.hpp"
#include "kernels/team_shape.hpp"

namespace zm::kernels {

// In place: logits (N,Vp) become probabilities, the padding columns >= V masked out and set to 0.
// losses[i] = logsumexp(row) - logit[target], in the arithmetic type (rounding each to bf16 would
// bias their mean, the step's loss, by up to 2^-9 relative).
template <typename T>
void softmax_crossentropy_forward(TeamShape shape, T* logits_to_probs, Acc<T>* losses,
                                  const int* targets, int64_t N, int64_t V, int64_t Vp);

// In place: probs (N,Vp) become dlogits = dloss * (probs - onehot(target)), 0 in the padding
// columns; dloss = d(total loss)/d(loss_i), e.g. 1/N.
template <typename T>
void softmax_crossentropy_backward(TeamShape shape, T* probs_to_dlogits, const int* targets,
                                   T dloss, int64_t N, int64_t V, int64_t Vp);

// Forward and backward in one pass over each row (the LM head's chunks): logits become dlogits;
// bitwise the two kernels' results.
template <typename T>
void softmax_crossentropy_fused(TeamShape shape, T* logits_to_dlogits, Acc<T>* losses,
                                const int* targets, T dloss, int64_t N, int64_t V, int64_t Vp);

}  // namespace zm::kernels
