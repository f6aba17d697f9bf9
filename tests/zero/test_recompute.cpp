// Activation recomputation (model.recompute = "blocks"): backward recomputes each block's forward
// from the block's saved input with the same kernels, so training is bitwise the same as without
// it, at every stage and rank count, with gradient accumulation too; and the activation memory
// the model allocates is the planner's and below what it keeps without recomputation.
#include <gtest/gtest.h>

#include "common/equivalence.hpp"
#include "common/test_watchdog.hpp"
#include "common/zero_test_util.hpp"
#include "model/gpt.hpp"

namespace {

using zm::testing::kGlobalBatch;

class Recompute : public ::testing::TestWithParam<int> {};

TEST_P(Recompute, BlocksTrainBitwiseAsWithout) {
  const int stage = GetParam();
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  for (int64_t accum : {1, 2}) {
    const auto kept = zm::testing::train(
        zm::testing::test_deck(stage, kGlobalBatch / N / accum, accum, {"model.recompute=none"}),
        *comm);
    const auto recomputed = zm::testing::train(
        zm::testing::test_deck(stage, kGlobalBatch / N / accum, accum, {"model.recompute=blocks"}),
        *comm);
    EXPECT_EQ(kept.losses, recomputed.losses) << "grad_accum " << accum;
    EXPECT_EQ(kept.params, recomputed.params) << "grad_accum " << accum;
    for (size_t s = 0; s < kept.records.size(); ++s)
      EXPECT_EQ(kept.records[s].grad_norm, recomputed.records[s].grad_norm) << "step " << s;
  }
}

INSTANTIATE_TEST_SUITE_P(Stages, Recompute, ::testing::Values(0, 1, 2, 3));

double activation_bytes(const std::vector<zm::BufferSpec>& plan) {
  double bytes = 0;
  for (const zm::BufferSpec& spec : plan)
    if (spec.category == zm::MemCategory::Activations) bytes += static_cast<double>(spec.bytes());
  return bytes;
}

// What the model allocates is what the planner prices (the same table), and recomputation keeps
// one block's activations instead of every block's: for L blocks, the saving is (L - 1) blocks'
// activations less L block outputs.
TEST(RecomputeMemory, AllocatedEqualsPlannedAndIsSmaller) {
  for (const char* mode : {"none", "blocks"}) {
    const zm::Deck deck =
        zm::testing::test_deck(0, 4, 1, {"model.layers=4", std::string("model.recompute=") + mode});
    zm::MemoryLedger ledger;
    const auto before = ledger.figures();
    const zm::ParamLayout layout(deck.model);
    {
      zm::GPT<float> model(layout, deck.train.micro_batch, deck.model.seq_len,
                           zm::RunContext{nullptr, nullptr, &ledger});
      const auto during = ledger.figures();
      const int activations = static_cast<int>(zm::MemCategory::Activations);
      const double allocated = static_cast<double>(during.current[activations]) -
                               static_cast<double>(before.current[activations]);
      EXPECT_EQ(allocated, activation_bytes(zm::GPT<float>::declared_buffers(
                               layout, deck.train.micro_batch, deck.model.seq_len)))
          << mode;
    }
  }
  const zm::Deck none = zm::testing::test_deck(0, 4, 1, {"model.layers=4"});
  zm::Deck blocks = none;
  blocks.model.recompute = "blocks";
  const double kept =
      activation_bytes(zm::GPT<float>::declared_buffers(zm::ParamLayout(none.model), 4, 16));
  const double recomputed =
      activation_bytes(zm::GPT<float>::declared_buffers(zm::ParamLayout(blocks.model), 4, 16));
  EXPECT_LT(recomputed, kept);
}

}  // namespace
