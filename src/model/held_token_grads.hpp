// The token embedding's part of the tied wte gradient, held over a step's micro-batches and added
// once, after the head's part of every micro-batch: where the step accumulates its gradients over
// several micro-batches and reduces them once (ZeRO stages 0-1, train.grad_accum > 1).
//
// Why: the tied gradient is the head's part plus the embedding's, for each micro-batch. Added as
// they come (head 1, embedding 1, head 2, ...), every micro-batch needs both parts on one rank.
// Held, the sum is the head's parts in order, plus the embedding's parts summed in order: a model
// held in parts (the embedding on one rank, the head on another) gets the same bits by summing
// each where it is made and adding the two. At stages 2-3 each micro-step is reduced on its own,
// so each adds its two parts at once.
#pragma once

#include <cstdint>
#include <vector>

#include "comm/communicator.hpp"
#include "core/memory.hpp"
#include "core/stage_spec.hpp"
#include "kernels/team_shape.hpp"

namespace zm {

// Whether a step at `stage` of `micro_batches` holds the token embedding's gradient.
bool holds_token_grads(const StageSpec& stage, int64_t micro_batches);

// What HeldTokenGrads allocates for `rows` vocabulary rows (this rank's) of width C, in elements
// of `element_bytes`: a wte gradient of its own.
std::vector<BufferSpec> held_token_grads_buffers(int64_t rows, int64_t C, int element_bytes);

template <typename Real>
class HeldTokenGrads {
 public:
  HeldTokenGrads(int64_t rows, int64_t C, MemoryLedger* ledger);
  // Where the model's backward adds the token embedding's part (kernels::encoder_backward's dwte).
  Real* wte() { return sums_.data(); }
  // Adds what it holds to `dwte` (of `dtype`: Real, or fp32 where the step sums in fp32) and
  // starts the next step's sum from zero.
  void add_to(kernels::TeamShape shape, void* dwte, DType dtype);

 private:
  TrackedBuffer<Real> sums_;  // (rows, C)
};

}  // namespace zm
