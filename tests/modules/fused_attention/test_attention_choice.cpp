// model.attention: "fused" (the default) gives a run the fused kernels, "reference" leaves the
// core's plain ones, for the trainer and the planner alike (RunExtensions); the fused kernels'
// backward recomputes Q K^T, which the hardware FLOPs count and the model FLOPs do not.
#include <gtest/gtest.h>

#include "common/zero_test_util.hpp"
#include "model/flops.hpp"
#include "modules/fused_attention/fused_attention_kernels.hpp"
#include "plan/run_extensions.hpp"

namespace {

TEST(AttentionChoice, FusedByDefaultReferenceIsThePlainKernels) {
  const zm::Deck by_default = zm::testing::test_deck(0, 2);
  EXPECT_EQ(by_default.value<std::string>("model.attention"), "fused");
  EXPECT_EQ(zm::run_extensions(by_default, 0).attention, &zm::fused_attention_kernels());
  const zm::Deck reference = zm::testing::test_deck(3, 2, 1, {"model.attention=reference"});
  EXPECT_EQ(zm::run_extensions(reference, 3).attention, nullptr);
  EXPECT_EQ(&zm::attention_kernels(zm::run_extensions(reference, 3)), &zm::plain_attention());
}

// L = 2, T = 64, C = 64: the backward's Q K^T again, 2 x 2 x 64 x 64 = 16384 per token, beside
// recomputed blocks' 232704 (tests/model/test_flops.cpp).
TEST(AttentionChoice, FusedBackwardRecomputesTheScores) {
  zm::ModelConfig m;
  m.layers = 2;
  m.heads = 4;
  m.dim = 64;
  m.vocab = 256;
  m.seq_len = 64;
  const zm::AttentionKernels& fused = zm::fused_attention_kernels();
  const double model = zm::flops_per_token(m, zm::plain_attention()).model();
  EXPECT_DOUBLE_EQ(zm::flops_per_token(m, fused).model(), model);
  EXPECT_DOUBLE_EQ(zm::flops_per_token(m, fused).recompute, 16384.0);
  EXPECT_DOUBLE_EQ(zm::flops_per_token(m, fused).hardware(), model + 16384.0);
  m.recompute = "blocks";
  EXPECT_DOUBLE_EQ(zm::flops_per_token(m, fused).recompute, 232704.0 + 16384.0);
}

}  // namespace
