// How a backward kernel writes an input gradient.
#pragma once

namespace zm::kernels {

// Accumulate adds to what the buffer holds, so that gradients arriving by several paths sum (the
// default, and the only mode for parameter gradients). Overwrite writes the gradient over the
// buffer: the same values as accumulating into zeros, without the caller's pass over memory to
// zero it first.
enum class GradWrite { Accumulate, Overwrite };

}  // namespace zm::kernels
