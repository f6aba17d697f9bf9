// The token embedding's part of the tied wte gradient, held over a step's micro-batches and added
// once, after the head's part of every micro-batch: where the step accumulates its gradients over
// several micro-batches and reduces them once (ZeRO stages 0-1, train.grad_accum > 1).
//
// Why: the tied gradient is the head's part plus the embedding's, for each micro-batch. Added as
// they come (head 1, embedding 1, head 2, ...), every micro-batch needs both parts on one rank.
// Held, the sum is the head's parts in order, then the embedding's in order: a model held in parts
// (the embedding on one rank, the head on another) gets the same bits by summing the head's parts
// where the head is and adding the embedding's after, where the embedding is. At stages 2-3 each
// micro-step is reduced on its own, so each adds its two parts at once.
#pragma once

#include <cstdint>
#include <vector>

#include "comm/communicator.hpp"
#include "core/memory.hpp"
#include "core/stage_spec.hpp"
#include "kernels/accumulate.hpp"
#include "kernels/team_shape.hpp"
#include "kernels/token_groups.hpp"

namespace zm {

// Whether a step at `stage` of `micro_batches` holds the token embedding's gradient.
bool holds_token_grads(const StageSpec& stage, int64_t micro_batches);

// What HeldTokenGrads allocates for `micro_batches` micro-batches of `rows` tokens of width C: each
// token's summed rows (arithmetic type, fp32) and its id.
std::vector<BufferSpec> held_token_grads_buffers(int64_t micro_batches, int64_t rows, int64_t C);

template <typename Real>
class HeldTokenGrads {
 public:
  HeldTokenGrads(int64_t micro_batches, int64_t rows, int64_t C, MemoryLedger* ledger);
  // Holds a micro-batch's part: each token of `groups` with its rows of dout (rows x C) summed, as
  // kernels::encoder_backward sums them.
  void hold(kernels::TeamShape shape, const kernels::TokenGroups& groups, const Real* dout);
  // Adds the held parts to `dwte` (of `dtype`: Real, or fp32 where the step sums in fp32) in
  // micro-batch order, each rounded once, and holds none after.
  void add_to(kernels::TeamShape shape, void* dwte, DType dtype);

 private:
  int64_t rows_, C_;
  TrackedBuffer<kernels::Acc<Real>> sums_;  // (micro_batches x rows, C)
  TrackedBuffer<int> ids_;                  // (micro_batches x rows)
  std::vector<int64_t> counts_;             // the tokens of each micro-batch held
};

}  // namespace zm
