// Memory and traffic of every stage, measured on a real run, against (1) the buffer declarations
// the planner sums and (2) the closed forms of the ZeRO paper.
#include <gtest/gtest.h>

#include "common/test_watchdog.hpp"
#include "common/zero_test_util.hpp"
#include "core/memory.hpp"
#include "plan/run_declarations.hpp"
#include "plan/run_extensions.hpp"

namespace {

using zm::MemCategory;

size_t planned_bytes(const std::vector<zm::BufferSpec>& plan, MemCategory category) {
  size_t bytes = 0;
  for (const auto& spec : plan)
    if (spec.category == category) bytes += static_cast<size_t>(spec.count) * 4;
  return bytes;
}

class Accounting : public ::testing::TestWithParam<int> {};

TEST_P(Accounting, AllocatedBytesEqualThePlanAndTheClosedForms) {
  const int stage = GetParam();
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  const zm::Deck deck = zm::testing::test_deck(stage, 2);
  zm::MemoryLedger ledger;
  std::array<size_t, zm::kMemCategories> before{};
  for (int c = 0; c < zm::kMemCategories; ++c) before[c] = ledger.current(MemCategory(c));

  const auto trainer_owned =
      zm::make_trainer(deck, stage, *comm, zm::RunContext{nullptr, nullptr, &ledger});
  zm::Trainer& trainer = *trainer_owned;
  const auto plan = zm::run_buffers(deck, stage, trainer.comms().mesh(),
                                    zm::attention_kernels(zm::run_extensions(deck, stage)));
  for (int c = 0; c < zm::kMemCategories; ++c) {
    SCOPED_TRACE(zm::mem_category_name(MemCategory(c)));
    EXPECT_EQ(ledger.current(MemCategory(c)) - before[c], planned_bytes(plan, MemCategory(c)));
  }

  // Closed forms, Psi' = parameters with partition padding (a multiple of N): fp32 parameters
  // and gradients take 4 bytes each, Adam's m and v 8.
  const auto& partition = trainer.partition();
  const size_t psi = static_cast<size_t>(partition.padded_total());
  ASSERT_EQ(psi % static_cast<size_t>(N), 0u);
  ASSERT_EQ(partition.shard_total() * N, partition.padded_total());
  const size_t params = ledger.current(MemCategory::Parameters) - before[0];
  const size_t grads = ledger.current(MemCategory::Gradients) - before[1];
  const size_t optim = ledger.current(MemCategory::Optimizer) - before[2];
  EXPECT_EQ(params, stage < 3 ? 4 * psi : 4 * psi / N);
  EXPECT_EQ(grads, stage < 2 ? 4 * psi : 4 * psi / N);
  EXPECT_EQ(optim, stage < 1 ? 8 * psi : 8 * psi / N);
  // Partition padding is bounded: less than one aligned chunk per unit.
  EXPECT_LT(psi - static_cast<size_t>(trainer.layout().total()),
            static_cast<size_t>(partition.num_units() * N * zm::kShardAlign));

  // Stage 0 and 1 hold no communication buffers beyond the step's statistics (the loss and a sum
  // of squares per dataset: embedding, blocks, final norm); stages 2 and 3 hold gradient buckets,
  // and stage 3 the gathered-unit slots.
  const size_t comm_buffers = ledger.current(MemCategory::CommBuffers) - before[4];
  const size_t statistics = 4 * static_cast<size_t>(1 + trainer.layout().num_datasets());
  if (stage < 2) {
    EXPECT_EQ(comm_buffers, statistics);
  } else {
    EXPECT_GT(comm_buffers, statistics);
  }
}

TEST_P(Accounting, BytesMovedPerStepEqualTheClosedForms) {
  const int stage = GetParam();
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const double N = comm->size();
  zm::Deck deck = zm::testing::test_deck(stage, 2, 1, {"train.steps=2"});
  const auto run = zm::testing::train(deck, *comm);
  const zm::ParamLayout layout(deck.model);
  const zm::Partition partition(layout, comm->size());
  const double psi_bytes = 4.0 * static_cast<double>(partition.padded_total());
  const double ring = (N - 1) / N;
  // The step statistics: the loss and a sum of squares per dataset, one all-reduce per step.
  const double stats = 2 * ring * 4.0 * static_cast<double>(1 + layout.num_datasets());
  for (const auto& record : run.records) {
    const auto& c = record.comm;
    using zm::CommOp;
    if (stage == 0) {
      EXPECT_NEAR(c[CommOp::AllReduce].bytes, 2 * ring * psi_bytes + stats, 1e-6 * psi_bytes);
      EXPECT_EQ(c[CommOp::ReduceScatter].calls, 0u);
      EXPECT_EQ(c[CommOp::AllGather].calls, 0u);
    } else {
      EXPECT_NEAR(c[CommOp::AllReduce].bytes, stats, 1e-9);
      EXPECT_EQ(c[CommOp::AllReduce].calls, 1u);
      EXPECT_NEAR(c[CommOp::ReduceScatter].bytes, ring * psi_bytes, 1e-6 * psi_bytes);
      EXPECT_EQ(c[CommOp::ReduceScatter].calls, static_cast<uint64_t>(layout.num_units()));
      const double gathers = stage == 3 ? 2.0 : 1.0;
      EXPECT_NEAR(c[CommOp::AllGather].bytes, gathers * ring * psi_bytes, 1e-6 * psi_bytes);
    }
    // Total: stages 0-2 move 2 Psi' (N-1)/N, stage 3 3 Psi' (N-1)/N, plus the statistics.
    const double total =
        c[CommOp::AllReduce].bytes + c[CommOp::ReduceScatter].bytes + c[CommOp::AllGather].bytes;
    EXPECT_NEAR(total, (stage == 3 ? 3 : 2) * ring * psi_bytes + stats, 1e-6 * psi_bytes);
  }
}

INSTANTIATE_TEST_SUITE_P(Stages, Accounting, ::testing::Values(0, 1, 2, 3));

}  // namespace
