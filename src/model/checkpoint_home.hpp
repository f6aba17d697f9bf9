// Where model.recompute = "blocks" keeps the blocks' outputs (each the next block's input) from
// the forward to the recomputation: the model's buffers on the device, one per layer, unless a
// module keeps them in another memory. Then the device holds two, those of the last two blocks,
// which the backward reads first: block l's output is written into the one of l's parity and,
// after the block, copied to the home (the previous copy waited first), and comes back into the
// same buffer one block ahead of its recomputation, while the block after it computes.
#pragma once

#include <cstddef>

#include "core/memory.hpp"

namespace zm {

class CheckpointHome {
 public:
  virtual ~CheckpointHome() = default;
  // The memory category the home's checkpoints are allocated in (e.g. MemCategory::Host).
  virtual MemCategory category() const = 0;
  // Queues a copy of `bytes` after the device work queued so far: to the home, or back.
  virtual void copy(bool to_home, void* to, const void* from, size_t bytes, int unit) = 0;
  // Blocks until every queued copy is done.
  virtual void wait() = 0;
};

}  // namespace zm
