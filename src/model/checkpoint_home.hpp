// Where model.recompute = "blocks" keeps each block's output (the next block's input) until its
// recomputation: the model's device buffers, one per layer, unless a module keeps them in another
// memory. Then the device keeps the last two blocks', which backward reads first; block l writes
// the one of l's parity, which goes to the home after the block (the copy before it waited first)
// and comes back one block ahead of the recomputation, while the block after it computes.
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
