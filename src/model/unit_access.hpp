// How the model reaches a unit's parameters and gradients. The ZeRO engine implements it: in
// stages 0-2 parameters are resident and acquire() is a lookup; in stage 3 acquire() waits for
// the unit's all-gather (prefetched earlier) and release() frees the gathered buffer.
#pragma once

namespace zm {

// When in the training step a unit's parameters are used.
enum class UnitUse {
  Forward,    // the unit's forward pass
  Head,       // the embedding unit again: LM-head forward and backward (tied weights)
  Backward,   // the unit's backward pass
  Recompute,  // a tiled block's forward again before its backward (model.recompute, model.tiles)
};

struct UnitEvent {
  int unit;
  UnitUse use;
  bool operator==(const UnitEvent& o) const { return unit == o.unit && use == o.use; }
};

// Real: the element type the model computes in (float, or bf16 under mixed precision).
template <typename Real>
class UnitAccess {
 public:
  virtual ~UnitAccess() = default;
  // Parameters of `unit` (its full padded range), valid until release().
  virtual const Real* acquire(UnitEvent event) = 0;
  virtual void release(UnitEvent event) = 0;
  // Where the unit's gradients accumulate (+=) during this micro-step (full padded range).
  virtual Real* grads(int unit) = 0;
  // Every gradient contribution of `unit` for this micro-step has been added.
  virtual void grads_ready(int unit) = 0;
  // Called between kernels: lets in-flight communication progress.
  virtual void poll() = 0;
};

}  // namespace zm
