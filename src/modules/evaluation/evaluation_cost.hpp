// What one evaluation costs, as the planner prices it: the forward-only pass over
// train.eval_batches held-out micro-batches per data-parallel rank (plan/run_declarations.hpp,
// run_forward_only): the step schedule's entries a forward reaches, each micro-batch (stage 3's
// unit gathers, in whatever format the schedule's strategies give them; stages 0-2 gather
// nothing), the copies that stage their shards where a tier keeps them off the device, and the
// loss's all-reduce; with a machine, its time. The run's accounting of an evaluation is the same
// (tests/modules/evaluation/test_evaluation_plan.cpp). The model's own collectives over its
// model-parallel group are not priced.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "comm/communicator.hpp"
#include "core/deck.hpp"
#include "core/zero_mesh.hpp"
#include "plan/machine.hpp"
#include "zero/schedule.hpp"
#include "zero/state_tier.hpp"

namespace zm {

struct EvaluationCost {
  std::array<double, kCommOps> bytes{};   // sent per rank (ring convention), by collective
  std::array<int64_t, kCommOps> calls{};  // collectives per rank, by kind
  CopyVolume copies;                      // between memories per rank (a state tier's)
  // With a machine: the forward FLOPs of the micro-batches at the sustained rate, the
  // collectives on their links, the passes around compressed ones, and the copies on the host
  // link (where the machine has one).
  double compute_seconds = 0, comm_seconds = 0, pass_seconds = 0, transfer_seconds = 0;
  double total_bytes() const;
  // The gathers are prefetched beside the forward, as a training step's: the longer of the
  // device's work and the communication, then the copies, which are waited where they are made.
  double seconds() const {
    return std::max(compute_seconds + pass_seconds, comm_seconds) + transfer_seconds;
  }
};

// One evaluation of `micro_batches` micro-batches per data-parallel rank at `stage` on `mesh`;
// `machine` may be null (no time).
EvaluationCost evaluation_cost(const Deck& deck, int stage, const ZeroMesh& mesh,
                               const Machine* machine, int64_t micro_batches);

}  // namespace zm
