// One training run of one ZeRO stage: the step loop of data, forward, backward, gradient
// norm and clipping, AdamW. The stage (src/zero) decides where state lives and what moves.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "comm/communicator.hpp"
#include "core/deck.hpp"
#include "core/memory.hpp"
#include "io/run_records.hpp"
#include "model/layout.hpp"
#include "train/data.hpp"
#include "train/fault_injection.hpp"
#include "train/model_step.hpp"
#include "zero/engine.hpp"
#include "zero/partition.hpp"
#include "zero/run_plan.hpp"

namespace zm {

class Trainer {
 public:
  Trainer(const Deck& deck, int stage, Communicator& comm);

  static double learning_rate(const TrainConfig& train, int64_t step);

  void init_parameters() { engine_->init_parameters(static_cast<uint64_t>(deck_.train.seed)); }
  StepRecord step(int64_t step);

  const Deck& deck() const { return deck_; }
  const ParamLayout& layout() const { return layout_; }
  const PartitionPlan& plan() const { return plan_; }
  ZeroEngine& engine() { return *engine_; }
  ModelStep& model() { return *model_; }
  int64_t tokens_per_rank_per_step() const;

 private:
  // The step's micro-batches, forward and backward; returns the sum of their mean losses.
  double forward_backward(int64_t step, Fault fault, StepTimes& times);
  // Loss and gradient norm over all ranks and micro-batches, into the record.
  void reduce_step_stats(double loss_sum, double micro_batches, StepRecord& record);

  Deck deck_;
  Communicator* comm_;
  ParamLayout layout_;
  PartitionPlan plan_;
  std::unique_ptr<ZeroEngine> engine_;
  std::unique_ptr<ModelStep> model_;
  std::unique_ptr<DataSource> data_;
  TrackedBuffer<float> stats_;  // {loss sum, gradient sum of squares}, all-reduced every step
  std::vector<int> host_inputs_, host_targets_;
};

}  // namespace zm
