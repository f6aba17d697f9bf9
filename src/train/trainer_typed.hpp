// The trainer in compute type Real: it owns its model, its ZeRO engine (the stage) and its data,
// and runs the step with no type dispatch inside. Built by make_trainer; tests that need the
// typed model or engine construct one directly.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "comm/phase.hpp"
#include "core/memory.hpp"
#include "model/gpt.hpp"
#include "model/held_token_grads.hpp"
#include "plan/run_extensions.hpp"
#include "train/data.hpp"
#include "train/micro_step_driver.hpp"
#include "train/trainer.hpp"

namespace zm {

template <typename Real>
class TrainerT final : public Trainer {
 public:
  TrainerT(const Deck& deck, int stage, Communicator& comm, const RunContext& context = {},
           kernels::TeamShape team_shape = kernels::kDefaultTeamShape);

  void init_parameters() override;
  StepRecord step(int64_t step) override;
  double forward_only_loss(const DataSource& source, int64_t micro_batches) override;

  const Deck& deck() const override { return deck_; }
  const ParamLayout& layout() const override { return layout_; }
  const Partition& partition() const override { return partition_; }
  ZeroEngine& engine() override { return *engine_; }
  MeshComms& comms() override { return *comms_; }

  GPT<Real>& model() { return model_; }
  ZeroEngineT<Real>& typed_engine() { return *engine_; }

 private:
  // The model's model-parallel group (of one rank without one), and the ranks that read
  // different data.
  ModelParallelGroup model_parallel_group() const;
  int data_parallel_ranks() const { return comms_->mesh().data_parallel(); }
  // Micro-batch `micro` of step `step`, this rank's sequences, on the device (in `model`'s
  // buffers: the trainer's by default).
  Batch load_micro_batch(int64_t step, int64_t micro, GPT<Real>* model = nullptr);
  // This rank's sequences starting at `first` of `source`, on the device.
  Batch load_sequences(const DataSource& source, int64_t first, GPT<Real>* model = nullptr);
  // The step's micro-batches: forward and backward of each in turn, or the run's driver.
  double run_micro_steps(int64_t step, StepRecord& record);
  // What the run's driver is given: `micro_batches` micro-batches, each loaded by `load`.
  MicroStepsCall<Real> driver_call(std::function<Batch(GPT<Real>&, int64_t)> load,
                                   int64_t micro_batches, StepRecord& record);
  // Loss and gradient norm over all ranks and micro-batches, into the record.
  void reduce_step_stats(double loss_sum, double micro_batches, StepRecord& record);
  // {loss, squared gradient norm} summed over every rank (the loss once per model-parallel
  // group).
  std::pair<double, double> sum_over_ranks(double loss_sum, const std::vector<double>& sumsq);
  // The step's phase for the watchdog: its name, and under NCCL a deadline on the whole step.
  PhaseSpec step_phase(int64_t step, StepRecord& record) const;

  Deck deck_;
  RunContext context_;
  Communicator* comm_;                // the world's
  std::unique_ptr<MeshComms> comms_;  // the mesh's communicators over comm_
  ParamLayout layout_;                // this rank's slice or part of the model
  Partition partition_;
  std::unique_ptr<ZeroEngineT<Real>> engine_;
  RunExtensions extensions_;  // what the modules give the model and the data
  GPT<Real> model_;
  std::unique_ptr<DataSource> data_;
  std::unique_ptr<MicroStepDriver> driver_;  // a module's, or nullptr
  // The token embedding's part of the wte gradient, held over the step (holds_token_grads) and
  // added before the embedding unit's reduction; null where added at once.
  std::unique_ptr<HeldTokenGrads<Real>> held_tokens_;
  TrackedBuffer<float> stats_;  // {loss sum, sums of squares per dataset}, all-reduced each step
  std::vector<int> host_inputs_, host_targets_;
};

}  // namespace zm
