// Softmax + cross-entropy over the real vocabulary of padded logits.
#pragma once

#include <cstdint>

#include "kernels/accumulate.hpp"
#include "kernels/team_shape.hpp"

namespace zm::kernels {

// In place: logits (N,Vp) become probabilities. Columns >= V (vocabulary padding) are masked out
// of the softmax and set to 0. losses[i] = logsumexp(row) - logit[target] (= -log prob, without
// underflow); targets in [0, V). The losses are kept in the arithmetic type (fp32 under bf16):
// the step's loss is their mean, and rounding each to bf16 would bias it by up to 2^-9 relative.
template <typename T>
void softmax_crossentropy_forward(TeamShape shape, T* logits_to_probs, Acc<T>* losses,
                                  const int* targets, int64_t N, int64_t V, int64_t Vp);

// In place, overwriting: probs (N,Vp) become dlogits = dloss * (probs - onehot(target)) for
// columns < V and 0 for the padding columns. dloss is d(total loss)/d(loss_i), e.g. 1/N for a
// mean.
template <typename T>
void softmax_crossentropy_backward(TeamShape shape, T* probs_to_dlogits, const int* targets,
                                   T dloss, int64_t N, int64_t V, int64_t Vp);

// softmax_crossentropy_forward and softmax_crossentropy_backward in one pass over each row (the
// LM head's chunks, model.classifier_chunk): in place, logits (N,Vp) become dlogits =
// dloss * (softmax - onehot(target)) (0 in the padding columns), and losses[i] as in the forward.
// The same arithmetic as the two kernels: bitwise their results.
template <typename T>
void softmax_crossentropy_fused(TeamShape shape, T* logits_to_dlogits, Acc<T>* losses,
                                const int* targets, T dloss, int64_t N, int64_t V, int64_t Vp);

}  // namespace zm::kernels
