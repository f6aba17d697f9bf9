// The fused kernels (flash_attention.hpp) as the attention kernels a model runs
// (model/attention_kernels.hpp): what `model.attention = "fused"` gives the run.
#pragma once

#include "model/attention_kernels.hpp"

namespace zm {

// They save per layer q, k and v in head layout and each row's log-sum-exp (B x NH x T in the
// arithmetic type), no T x T matrix; their workspace is each row's dout . out; their backward
// recomputes Q K^T tile by tile.
const AttentionKernels& fused_attention_kernels();

}  // namespace zm
