// What the planner prices of one evaluation (evaluation_cost.hpp: the step schedule's entries a
// forward-only micro-batch posts, and the loss's all-reduce) is what an evaluation sends: the
// collectives and bytes each rank's communicators count over Trainer::forward_only_loss.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/test_watchdog.hpp"
#include "core/modules.hpp"
#include "modules/evaluation/evaluated_run.hpp"
#include "modules/evaluation/evaluation_cost.hpp"
#include "plan/planner.hpp"
#include "plan/run_extensions.hpp"

namespace {

// One evaluation at `stage` under `overrides`: what each communicator counts against the plan.
zm::EvaluationCost check_evaluation(zm::Communicator& comm, int stage,
                                    const std::vector<std::string>& overrides) {
  const zm::Deck deck = zm::testing::deck_at(stage, comm.size(), overrides);
  const int64_t batches = zm::evaluation_settings(deck).batches;
  const zm::ZeroMesh mesh = zm::plan_zero_mesh(deck, stage, comm.size(), nullptr);
  const zm::EvaluationCost planned = zm::evaluation_cost(deck, stage, mesh, nullptr, batches);
  const auto trainer = zm::make_trainer(deck, stage, comm);
  trainer->init_parameters();
  trainer->step(0);
  const zm::HeldOutSplit held_out = zm::held_out_split(deck);
  const zm::CommStats before = trainer->comms().stats();
  trainer->forward_only_loss(*held_out.data, batches);
  const zm::CommStats after = trainer->comms().stats();
  for (int op = 0; op < zm::kCommOps; ++op) {
    SCOPED_TRACE(zm::comm_op_name(zm::CommOp(op)));
    EXPECT_EQ(static_cast<int64_t>(after.ops[op].calls - before.ops[op].calls), planned.calls[op]);
    const double bytes = after.ops[op].bytes - before.ops[op].bytes;
    EXPECT_NEAR(bytes, planned.bytes[op], 1e-12 * (1 + planned.bytes[op]));
  }
  return planned;
}

TEST(EvaluationPlan, PlannedEqualsMeasured) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  for (int stage = 0; stage <= 3; ++stage)
    for (const char* overlap : {"true", "false"}) {
      SCOPED_TRACE(fmt::format("stage {}, {} ranks, zero.overlap = {}", stage, N, overlap));
      const zm::Deck deck =
          zm::testing::deck_at(stage, N, {fmt::format("zero.overlap={}", overlap)});
      const int64_t batches = zm::evaluation_settings(deck).batches;
      const zm::EvaluationCost planned =
          check_evaluation(*comm, stage, {fmt::format("zero.overlap={}", overlap)});
      // Stage 3 gathers every unit once per micro-batch, the embedding unit twice (the head).
      const int64_t gathers = planned.calls[static_cast<int>(zm::CommOp::AllGather)];
      if (stage == 3 && N > 1) {
        EXPECT_EQ(gathers, batches * (zm::run_layout(deck, stage).num_units() + 1));
      } else if (stage < 3) {
        EXPECT_EQ(gathers, 0);
      }
    }
}

// The model's own collectives along tp in the forward-only pass are the schedule's ModelSync
// entries, priced like the others.
TEST(EvaluationPlan, PlannedEqualsMeasuredUnderTensorParallelism) {
  const zm::ModuleInfo* module = zm::module_of_key("parallel.tp");
  if (module != nullptr && !module->built) GTEST_SKIP() << "no tensor parallelism in this build";
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  if (comm->size() % 2 != 0) GTEST_SKIP() << "tp 2 needs an even rank count";
  for (int stage : {0, 3}) {
    SCOPED_TRACE(fmt::format("stage {}, {} ranks, tp 2", stage, comm->size()));
    const zm::EvaluationCost planned = check_evaluation(*comm, stage, {"parallel.tp=2"});
    EXPECT_GT(planned.calls[static_cast<int>(zm::CommOp::AllReduce)], 1);
  }
}

}  // namespace
