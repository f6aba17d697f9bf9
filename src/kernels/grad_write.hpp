// How a backward kernel writes an input gradient.
#pragma once

namespace zm::kernels {

// Accumulate adds to the buffer (gradients arriving by several paths sum; the only mode for
// parameter gradients). Overwrite gives the values of accumulating into zeros, without first
// zeroing the buffer.
enum class GradWrite { Accumulate, Overwrite };

}  // namespace zm::kernels
