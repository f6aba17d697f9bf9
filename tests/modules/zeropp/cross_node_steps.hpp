// Each step's bytes out of the node, counted as a run counts them (CrossNodeCounters,
// modules/zeropp/cross_node.hpp), through the `around_step` of zm::testing::train and of
// check_planned_equals_measured; and that check with those bytes against the plan's.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <vector>

#include "common/planned_equals_measured.hpp"
#include "modules/zeropp/cross_node.hpp"

namespace zm::testing {

class CrossNodeSteps {
 public:
  // Counts from the first of `steps` steps until the last (its counters gone before the trainer).
  explicit CrossNodeSteps(int64_t steps) : steps_(steps) {}
  std::function<void(Trainer&, bool)> around_step() {
    return [this](Trainer& trainer, bool after) {
      if (!after) {
        if (!counters_) counters_ = std::make_unique<CrossNodeCounters>(trainer.comms());
        before_ = counters_->stats();
        return;
      }
      left.push_back(counters_->stats() - before_);
      if (static_cast<int64_t>(left.size()) == steps_) counters_.reset();
    };
  }
  std::vector<CommStats> left;  // each step's

 private:
  int64_t steps_;
  std::unique_ptr<CrossNodeCounters> counters_;
  CommStats before_;
};

// check_planned_equals_measured, and each step's bytes out of the node against the plan's.
inline void check_planned_equals_measured_cross_node(const Deck& deck, int stage,
                                                     Communicator& comm) {
  const ZeroMesh mesh = plan_zero_mesh(deck, stage, comm.size(), nullptr);
  const auto planned = plan_cross_node_traffic(deck, stage, mesh);
  double total = 0;
  for (double bytes : planned) total += bytes;
  if (mesh.ranks_per_node > 0 && mesh.ranks_per_node < mesh.world())
    EXPECT_GT(total, 0.0);  // the step statistics over every rank, at least
  else
    EXPECT_EQ(total, 0.0);
  CrossNodeSteps steps(deck.train.steps);
  check_planned_equals_measured(deck, stage, comm, steps.around_step());
  ASSERT_EQ(static_cast<int64_t>(steps.left.size()), deck.train.steps);
  for (const CommStats& step : steps.left)
    for (int op = 0; op < kCommOps; ++op) {
      SCOPED_TRACE(comm_op_name(CommOp(op)));
      EXPECT_NEAR(step.ops[op].bytes, planned[op], 1e-12 * (1 + planned[op]));
    }
}

}  // namespace zm::testing
