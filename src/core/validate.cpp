#include "core/validate.hpp"

#include <vector>

#include "core/error.hpp"
#include "core/stage_spec.hpp"
#include "core/zero_mesh.hpp"

namespace zm {

namespace {

// ZeRO-Offload moves the state a sharded optimizer holds: stage 0 replicates it, and the
// parameter shard exists only where parameters are gathered per unit.
void check_offload(const Deck& deck, int stage) {
  const char* all = deck.zero.all_stages ? " (zero.stage = \"all\" runs stages 0-3)" : "";
  if (deck.zero.offload_optimizer != "none" && !stage_spec(stage).shards_states())
    fail(
        "{}: zero.offload_optimizer = \"{}\" needs zero.stage 1-3, whose optimizer state is "
        "sharded; stage {} replicates it on every rank{}. Expected \"none\" at stage {}",
        deck.where("zero.offload_optimizer"), deck.zero.offload_optimizer, stage, all, stage);
  if (deck.zero.offload_params != "none" && !stage_spec(stage).gathers_parameters())
    fail(
        "{}: zero.offload_params = \"{}\" needs zero.stage = 3, the stage that holds a parameter "
        "shard and gathers it per unit; this run is stage {}{}. Expected \"none\" at stages 0-2",
        deck.where("zero.offload_params"), deck.zero.offload_params, stage, all);
}

// What offloading the parameters needs whatever the stage.
void check_offload_params(const Deck& deck) {
  if (deck.zero.offload_params == "none") return;
  if (deck.zero.offload_optimizer == "none")
    fail(
        "{}: zero.offload_params = \"{}\" needs zero.offload_optimizer = \"host\": AdamW writes "
        "the parameter shard, so a shard on the host is updated there. Expected "
        "zero.offload_optimizer = \"host\" too, or zero.offload_params = \"none\"",
        deck.where("zero.offload_params"), deck.zero.offload_params);
  if (deck.zero.secondary_shard_size != 0)
    fail(
        "{}: zero.offload_params = \"{}\" with zero.secondary_shard_size (hpZ, {}): under hpZ the "
        "parameter shard is the secondary copy, which an all-gather across the groups refills "
        "after every update; that collective writes device memory (NCCL reads and writes no "
        "host memory), so the shard stays on the device. Expected zero.offload_params = \"none\" "
        "with hpZ (zero.offload_optimizer = \"host\" works with it)",
        deck.where("zero.offload_params"), deck.zero.offload_params,
        deck.where("zero.secondary_shard_size"));
}

// A target is reached at an evaluation: without evaluations it could never be.
void check_evaluation(const Deck& deck) {
  if (deck.train.target_loss > 0 && !deck.train.evaluates())
    fail(
        "{}: train.target_loss = {} needs evaluations to reach it: train.eval_every = 0. "
        "Expected train.eval_every > 0 (steps between evaluations on the held-out split)",
        deck.where("train.target_loss"), deck.train.target_loss);
  if (!deck.data.val_source.empty() && deck.data.val_source == deck.data.source)
    fail(
        "{}: data.val_source = \"{}\" is data.source itself: evaluation would read tokens that "
        "training reads. Expected another token shard, or \"\" to hold out the tail of "
        "data.source (data.val_fraction)",
        deck.where("data.val_source"), deck.data.val_source);
}

std::vector<RunCheck>& run_checks() {
  static std::vector<RunCheck> checks;
  return checks;
}

}  // namespace

void add_validation(RunCheck check) {
  run_checks().push_back(std::move(check));
}

void validate(const Deck& deck, const RunShape& shape, Validation purpose) {
  // The mesh's own checks: the model dimensions divide the ranks, the shard sizes divide the
  // data-parallel ranks, hpZ and hybrid sharding exclude each other.
  zero_mesh(deck, shape.stage, static_cast<int>(shape.ranks),
            static_cast<int>(shape.ranks_per_node));
  if (purpose == Validation::Run) {
    check_offload(deck, shape.stage);
  }
  check_offload_params(deck);
  check_evaluation(deck);
  for (const RunCheck& check : run_checks()) check(deck, shape, purpose);
}

}  // namespace zm
