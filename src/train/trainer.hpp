// One training run of one ZeRO stage: the step loop of data, forward, backward, gradient
// norm and clipping, AdamW. The stage (src/zero) decides where state lives and what moves.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "comm/communicator.hpp"
#include "core/deck.hpp"
#include "core/memory.hpp"
#include "model/layout.hpp"
#include "train/data.hpp"
#include "train/model_step.hpp"
#include "zero/engine.hpp"
#include "zero/partition.hpp"

namespace zm {

struct StepTimes {
  double forward = 0;    // forward passes of all micro-steps (includes waits inside them)
  double backward = 0;   // backward passes, and waiting for the last gradient collectives
  double comm_wait = 0;  // time blocked on collectives anywhere in the step
  double optimizer = 0;  // norm, clipping, AdamW and parameter re-distribution
  double total = 0;
};

struct StepRecord {
  int64_t step = 0;      // 0-based
  double loss = 0;       // mean over the global batch
  double grad_norm = 0;  // of the averaged gradients, before clipping
  double lr = 0;
  bool finite = true;  // loss and gradient norm are finite (else no update was made)
  StepTimes times;
  CommStats comm;  // this step's collectives on this rank
};

class Trainer {
 public:
  Trainer(const Deck& deck, int stage, Communicator& comm);

  // Every buffer a trainer allocates at `ranks` ranks: the stage's, the model's and the step's
  // own. The planner sums the same list.
  static std::vector<BufferSpec> buffer_plan(const Deck& deck, int stage, int ranks);
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
