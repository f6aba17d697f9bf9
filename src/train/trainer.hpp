// One training run of one ZeRO stage, behind an interface that does not depend on the compute
// type: the run loop, checkpoints and benchmarks drive a Trainer without knowing whether it
// computes in fp32 or bf16. make_trainer is the one place where the deck's precision becomes a
// type (TrainerT<Real>, trainer_typed.hpp).
#pragma once

#include <cstdint>
#include <memory>

#include "comm/communicator.hpp"
#include "comm/run_context.hpp"
#include "core/deck.hpp"
#include "io/run_records.hpp"
#include "kernels/team_shape.hpp"
#include "model/layout.hpp"
#include "train/data.hpp"
#include "zero/engine.hpp"
#include "zero/partition.hpp"

namespace zm {

class Trainer {
 public:
  virtual ~Trainer() = default;

  // Initialises the parameters from the deck's seed (the same values at any rank count, stage
  // and precision).
  virtual void init_parameters() = 0;
  // One optimizer step: micro-batches, forward, backward, gradient norm and clipping, AdamW.
  // Only the step: what happens around it (progress lines, results, checkpoints, what modules
  // measure) hangs on the run's step hooks (train/step_hooks.hpp).
  virtual StepRecord step(int64_t step) = 0;
  // A forward-only pass between steps: `micro_batches` micro-batches of `source` per
  // data-parallel rank (train/data.hpp, forward_only_sequence), each a forward that reaches the
  // parameters as a training forward does (stage 3 gathers them: ZeroEngine::begin_forward_only)
  // and makes the loss only; returns their mean loss over every rank (collective: the losses are
  // summed in the statistics' all-reduce). The model is unchanged, and so is the next step.
  // What it posts: the schedule's entries once per ScheduledCollective::per_forward_only.
  virtual double forward_only_loss(const DataSource& source, int64_t micro_batches) = 0;

  virtual const Deck& deck() const = 0;
  virtual const ParamLayout& layout() const = 0;
  virtual const Partition& partition() const = 0;
  // The untyped engine: checkpoints read and write its fp32 state.
  virtual ZeroEngine& engine() = 0;
  // The run's communicators: the world, and the shard group and replicas under hybrid sharding.
  virtual MeshComms& comms() = 0;

  // The step's tokens (the global batch) per rank: a model-parallel group shares its
  // data-parallel rank's micro-batches, so each of its ranks counts its share of them.
  double tokens_per_rank_per_step() const;
};

// The trainer of ZeRO stage `stage` in the deck's precision. Its step and the model's units are
// Phases of `context` (the default: unobserved and unwatched). Its model's and engine's kernels
// run teams of `team_shape` (tests pass others to take a GPU's code paths on the host).
std::unique_ptr<Trainer> make_trainer(const Deck& deck, int stage, Communicator& comm,
                                      const RunContext& context = {},
                                      kernels::TeamShape team_shape = kernels::kDefaultTeamShape);

}  // namespace zm
