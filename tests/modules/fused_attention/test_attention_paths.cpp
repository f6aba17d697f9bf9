// model.attention: the fused kernels (flash_attention.hpp) train as the reference ones (the core's
// plain kernels) at every stage, on sequences of two tiles, the second ragged; and they keep no
// T x T buffer: the activations they allocate are the planner's, smaller than the reference's by
// the maps less the per-row log-sum-exp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "common/test_watchdog.hpp"
#include "common/zero_test_util.hpp"
#include "model/gpt.hpp"
#include "plan/run_extensions.hpp"

namespace {

using zm::testing::category_bytes;

constexpr int64_t kAttentionBatch = 4, kSeqLen = 80;

zm::Deck deck_with(int stage, int ranks, const std::string& attention) {
  return zm::testing::test_deck(
      stage, kAttentionBatch / ranks, 1,
      {"model.attention=" + attention, "model.seq_len=" + std::to_string(kSeqLen)});
}

class AttentionPaths : public ::testing::TestWithParam<int> {};

// The two paths sum in different orders: losses agree to 1e-5 relative, and the parameters after
// the last step to 1e-4 of their largest magnitude.
TEST_P(AttentionPaths, FusedTrainsAsTheReference) {
  const int stage = GetParam();
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  if (kAttentionBatch % comm->size() != 0) GTEST_SKIP() << "global batch not divisible";
  const auto reference = zm::testing::train(deck_with(stage, comm->size(), "reference"), *comm);
  const auto fused = zm::testing::train(deck_with(stage, comm->size(), "fused"), *comm);
  ASSERT_EQ(fused.losses.size(), reference.losses.size());
  for (size_t s = 0; s < reference.losses.size(); ++s)
    EXPECT_NEAR(fused.losses[s], reference.losses[s], 1e-5 * reference.losses[s]) << "step " << s;
  double diff = 0, scale = 0;
  for (size_t i = 0; i < reference.params.size(); ++i) {
    diff = std::max(diff, std::fabs(double(fused.params[i]) - reference.params[i]));
    scale = std::max(scale, std::fabs(double(reference.params[i])));
  }
  EXPECT_LE(diff, 1e-4 * scale);
}

INSTANTIATE_TEST_SUITE_P(Stages, AttentionPaths, ::testing::Values(0, 1, 2, 3));

TEST(AttentionMemory, FusedKeepsNoScoreMatrix) {
  const zm::Deck fused = deck_with(0, 1, "fused"), reference = deck_with(0, 1, "reference");
  const int64_t B = fused.train.micro_batch, T = kSeqLen, L = fused.model.layers;
  const int64_t heads = fused.model.heads, C = fused.model.dim;
  const zm::AttentionKernels& fused_kernels = zm::attention_kernels(zm::run_extensions(fused, 0));
  zm::MemoryLedger ledger;
  const zm::ParamLayout layout(fused.model);
  const auto planned = zm::GPT<float>::declared_buffers(layout, B, T, fused_kernels);
  {
    zm::GPT<float> model(layout, B, T, zm::RunContext{nullptr, nullptr, &ledger},
                         zm::GemmMath::FP32, zm::kernels::kDefaultTeamShape, {}, fused_kernels);
    const auto during = ledger.figures();
    for (zm::MemCategory c : {zm::MemCategory::Activations, zm::MemCategory::Workspace})
      EXPECT_EQ(static_cast<double>(during.current[static_cast<int>(c)]),
                category_bytes(planned, c));
  }
  const auto kept =
      zm::GPT<float>::declared_buffers(zm::ParamLayout(reference.model), B, T,
                                       zm::attention_kernels(zm::run_extensions(reference, 0)));
  // Per layer: the B x heads x T x T probabilities out, B x heads x T log-sum-exps in (fp32).
  EXPECT_EQ(category_bytes(kept, zm::MemCategory::Activations) -
                category_bytes(planned, zm::MemCategory::Activations),
            4.0 * L * B * heads * (T * T - T));
  // Workspace: the score gradients and the reference's four head-layout buffers out, a
  // statistic per row in.
  EXPECT_EQ(category_bytes(kept, zm::MemCategory::Workspace) -
                category_bytes(planned, zm::MemCategory::Workspace),
            4.0 * (B * heads * T * T + 4 * B * T * C - B * heads * T));
  for (const zm::BufferSpec& spec : planned) EXPECT_LT(spec.count, B * heads * T * T) << spec.name;
}

}  // namespace
