// How a step's micro-batches run. The core's loop (train/trainer.cpp) runs each micro-batch's
// forward, then its backward, in turn. A module may run them otherwise (several models of one
// part each in flight, say): a driver made for the run (add_micro_step_driver) takes the loop's
// place. The norm, the clipping and the optimizer stay the trainer's.
#pragma once

#include <functional>
#include <memory>

#include "comm/mesh_comms.hpp"
#include "comm/run_context.hpp"
#include "core/deck.hpp"
#include "io/run_records.hpp"
#include "model/gpt.hpp"
#include "zero/engine.hpp"

namespace zm {

template <typename Real>
struct MicroStepsCall {
  ZeroEngineT<Real>& engine;
  MeshComms& comms;
  GPT<Real>& model;  // the trainer's
  // Another model like the trainer's: its own activations, in the run's ledger, and the trainer's
  // model's scratch (GPT::scratch: run one pass at a time).
  std::function<std::unique_ptr<GPT<Real>>()> another_model;
  // Micro-batch `micro` of the step (this rank's sequences), uploaded into `model`.
  std::function<Batch(GPT<Real>& model, int64_t micro)> load;
  int64_t micro_batches;
  const RunContext& context;
  StepRecord& record;  // the forward and backward times
};

class MicroStepDriver {
 public:
  virtual ~MicroStepDriver() = default;
  // Runs every micro-batch's forward and backward, begins the engine's micro-steps and finishes
  // its backward (the gradients ready for the norm and the optimizer); returns the sum of the
  // micro-batches' losses this rank computed.
  virtual double run(const MicroStepsCall<float>& call) = 0;
  // Loss-only forwards (Trainer::forward_only_loss): the sum of the losses this rank computed.
  virtual double forward_only(const MicroStepsCall<float>& call) = 0;
#if ZEROMINI_HAVE_BF16
  virtual double run(const MicroStepsCall<bf16>& call) = 0;
  virtual double forward_only(const MicroStepsCall<bf16>& call) = 0;
#endif
};

// A module's driver for a run of `deck` at `stage`, or nullptr (the first that makes one wins).
using MicroStepDriverMaker =
    std::function<std::unique_ptr<MicroStepDriver>(const Deck& deck, int stage)>;
void add_micro_step_driver(MicroStepDriverMaker maker);
std::unique_ptr<MicroStepDriver> make_micro_step_driver(const Deck& deck, int stage);

}  // namespace zm
