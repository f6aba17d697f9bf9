// What the element counts of the model's buffers are functions of (GPT's buffer tables, in
// gpt_buffers.cpp), and the buffers that the parts the model runs declare beside them: the
// attention kernels' (model/attention_kernels.hpp) and a model-parallel scheme's
// (model/model_parallel.hpp), which the model allocates and the planner prices from one list.
#pragma once

#include <cstdint>
#include <vector>

#include "core/memory.hpp"
#include "kernels/accumulate.hpp"

namespace zm {

class ParamLayout;

// Micro-batches of B x T (N = B * T tokens), width C, NH heads and the padded vocabulary Vp;
// where the model is held in `slices` slices (model/layout.hpp) each rank's share of the heads
// (NHl), of the attention width (Cl), of the MLP width (Fl) and of the vocabulary (Vl), all of
// them in a whole model; the rows of logits that exist at once (Nc: one chunk of
// model.classifier_chunk tokens, or all N) and of the final norm (Nh: N), both 0 without the head.
struct BufferShape {
  int64_t B, T, N, C, NH, Vp;
  int64_t slices, NHl, Cl, Fl, Vl;
  int64_t Nc, Nh;
};
BufferShape buffer_shape(const ParamLayout& layout, int64_t B, int64_t T);

// One buffer that a part of the model declares.
struct DeclaredBuffer {
  const char* name;  // in the model's tables "layer{l}.{name}" when saved, "{name}" as workspace
  // Activations: saved by a layer's forward for the layer's backward (a set per layer, or under
  // model.recompute one for the block recomputed); Workspace: one that every layer reuses.
  MemCategory category;
  bool arithmetic;  // elements of the arithmetic type (kernels::Acc<Real>, fp32 under bf16)
  int64_t (*count)(const BufferShape&);
};

// The declared buffers of one category as the model allocated them: those of Real and those of
// the arithmetic type, each in the order they were declared.
template <typename Real>
struct DeclaredBuffers {
  std::vector<TrackedBuffer<Real>> real;
  std::vector<TrackedBuffer<kernels::Acc<Real>>> arithmetic;
};

}  // namespace zm
