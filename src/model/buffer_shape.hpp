// What the element counts of the model's buffers are functions of (GPT's buffer tables, in
// gpt_buffers.cpp, and the attention kernels' own, model/attention_kernels.hpp).
#pragma once

#include <cstdint>

#include "core/deck.hpp"

namespace zm {

// Micro-batches of B x T (N = B * T tokens), width C, NH heads and the padded vocabulary Vp;
// under tensor parallelism each rank's share of the heads (NHl), of the attention width
// (Cl = C / tp), of the MLP width (Fl = 4C / tp) and of the vocabulary (Vl = Vp / tp); and the
// rows of logits that exist at once (Nc: one chunk of model.classifier_chunk tokens, or all N).
struct BufferShape {
  int64_t B, T, N, C, NH, Vp;
  int64_t tp, NHl, Cl, Fl, Vl;
  int64_t Nc;
};
BufferShape buffer_shape(const ModelConfig& config, int64_t B, int64_t T, int tp);

}  // namespace zm
