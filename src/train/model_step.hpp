// The GPT model in the compute type of the engine it runs on, behind a face that does not depend
// on that type: the trainer drives a step without knowing whether it computes in fp32 or bf16.
#pragma once

#include <memory>
#include <vector>

#include "core/deck.hpp"
#include "core/memory.hpp"
#include "model/gpt.hpp"
#include "model/layout.hpp"
#include "zero/engine.hpp"

namespace zm {

class ModelStep {
 public:
  virtual ~ModelStep() = default;
  // Copies a micro-batch (host arrays of B*T tokens) to the device.
  virtual Batch upload(const int* inputs, const int* targets) = 0;
  // Forward over the engine's parameters; returns the micro-batch's mean loss.
  virtual double forward(const Batch& batch) = 0;
  // Backward into the engine's gradients.
  virtual void backward(const Batch& batch) = 0;
};

// The model for micro-batches of the deck's shape, in the compute type of `engine` (created
// for the same deck).
std::unique_ptr<ModelStep> make_model_step(const ParamLayout& layout, ZeroEngine& engine,
                                           const Deck& deck);

}  // namespace zm
