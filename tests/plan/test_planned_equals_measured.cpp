// What `zeromini plan` predicts for a rank count is what a run at that rank count allocates and
// sends, byte for byte, for every stage, in fp32 and (where the build has bf16) mixed precision.
#include <gtest/gtest.h>

#include "common/zero_test_util.hpp"
#include "core/memory.hpp"
#include "plan/planner.hpp"

namespace {

class PlannedEqualsMeasured : public ::testing::TestWithParam<int> {};

TEST_P(PlannedEqualsMeasured, MemoryAndTraffic) {
  const int stage = GetParam();
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD);
  const int N = comm->size();
  std::vector<std::string> precisions = {"fp32"};
  if (ZEROMINI_HAVE_BF16) precisions.push_back("bf16");
  for (const std::string& precision : precisions)
    for (const int64_t grad_accum : {1, 2})
      for (const char* recompute : {"none", "blocks"}) {
        SCOPED_TRACE(fmt::format("stage {}, {} ranks, grad_accum {}, {}, recompute {}", stage, N,
                                 grad_accum, precision, recompute));
        const zm::Deck deck =
            zm::testing::test_deck(stage, 3, grad_accum,
                                   {"train.steps=2", "train.precision=" + precision,
                                    "model.recompute=" + std::string(recompute)});
        const zm::MemoryPlan planned = zm::plan_memory(deck, stage, N);  // priced as it runs
        const auto planned_traffic = zm::plan_traffic(deck, stage, N);

        auto& ledger = zm::memory_ledger();
        const zm::MemoryFigures before = ledger.figures();
        ledger.reset_peaks();
        const auto trainer_owned = zm::make_trainer(deck, stage, *comm);
        zm::Trainer& trainer = *trainer_owned;
        trainer.init_parameters();
        std::vector<zm::StepRecord> records;
        for (int64_t s = 0; s < deck.train.steps; ++s) records.push_back(trainer.step(s));

        for (int c = 0; c < zm::kMemCategories; ++c) {
          SCOPED_TRACE(zm::mem_category_name(zm::MemCategory(c)));
          // Held now, and at the peak of the steps: nothing is allocated beyond the plan.
          EXPECT_EQ(static_cast<double>(ledger.figures().current[c] - before.current[c]),
                    planned.bytes[c]);
          EXPECT_EQ(static_cast<double>(ledger.figures().peak[c] - before.current[c]),
                    planned.bytes[c]);
        }
        for (const auto& record : records)
          for (int op = 0; op < zm::kCommOps; ++op) {
            SCOPED_TRACE(zm::comm_op_name(zm::CommOp(op)));
            EXPECT_NEAR(record.comm.ops[op].bytes, planned_traffic[op],
                        1e-12 * (1 + planned_traffic[op]));
          }
      }
}

INSTANTIATE_TEST_SUITE_P(Stages, PlannedEqualsMeasured, ::testing::Values(0, 1, 2, 3));

}  // namespace
