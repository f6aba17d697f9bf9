// The FLOP count behind MFU and the planner's step time (model/flops.hpp), against values
// computed by hand for a tiny model and against GPT-2 124M's published parameter count; what
// attention kernels say their backward recomputes counts as hardware work.
#include <gtest/gtest.h>

#include "model/flops.hpp"
#include "model/layout.hpp"

namespace {

const zm::AttentionKernels& plain = zm::plain_attention();

// Attention kernels whose backward recomputes 5 FLOPs per token and layer (their passes are
// never run here).
class Recomputing final : public zm::AttentionKernels {
 public:
  std::vector<zm::AttentionBuffer> buffers() const override { return {}; }
  double recomputed_flops_per_token(const zm::ModelConfig& m) const override {
    return 5.0 * static_cast<double>(m.layers);
  }
  void forward(const zm::AttentionCall<float>&, float*, const float*) const override {}
  void backward(const zm::AttentionCall<float>&, float*, const float*, const float*,
                zm::kernels::GradWrite) const override {}
#if ZEROMINI_HAVE_BF16
  void forward(const zm::AttentionCall<zm::bf16>&, zm::bf16*, const zm::bf16*) const override {}
  void backward(const zm::AttentionCall<zm::bf16>&, zm::bf16*, const zm::bf16*, const zm::bf16*,
                zm::kernels::GradWrite) const override {}
#endif
};

// L = 2, C = 64, T = 64, V = 256 (no padding). Parameters: wte 256 x 64 = 16384, wpe 64 x 64 =
// 4096, each block 12 x 64^2 + 13 x 64 = 49984, final norm 128: 120576 in all, 116480 without wpe.
zm::ModelConfig tiny() {
  zm::ModelConfig m;
  m.layers = 2;
  m.heads = 4;
  m.dim = 64;
  m.vocab = 256;
  m.seq_len = 64;
  m.recompute = "none";
  return m;
}

TEST(Flops, TinyModelByHand) {
  const zm::ModelConfig m = tiny();
  ASSERT_EQ(zm::ParamLayout(m).real_param_count(), 120576);
  const zm::FlopsPerToken f = zm::flops_per_token(m, plain);
  EXPECT_DOUBLE_EQ(f.dense, 6.0 * 116480);            // 698880
  EXPECT_DOUBLE_EQ(f.attention, 12.0 * 2 * 64 * 64);  // 98304: the full T x T, not halved
  EXPECT_DOUBLE_EQ(f.model(), 797184.0);
  EXPECT_DOUBLE_EQ(f.recompute, 0.0);
  EXPECT_DOUBLE_EQ(f.padding, 0.0);
  EXPECT_DOUBLE_EQ(f.hardware(), f.model());
}

// Recomputation is hardware work, never model work: MFU's numerator does not change with it.
TEST(Flops, RecomputationCountsAsHardwareOnly) {
  zm::ModelConfig m = tiny();
  const double model = zm::flops_per_token(m, plain).model();
  m.recompute = "blocks";  // each block's forward again: 2 x (2 x 49984 + 4 x 64 x 64) = 232704
  EXPECT_DOUBLE_EQ(zm::flops_per_token(m, plain).model(), model);
  EXPECT_DOUBLE_EQ(zm::flops_per_token(m, plain).recompute, 232704.0);
  const Recomputing recomputing;  // and what the attention's backward recomputes: 2 x 5
  EXPECT_DOUBLE_EQ(zm::flops_per_token(m, recomputing).recompute, 232704.0 + 10.0);
  m.recompute = "none";
  EXPECT_DOUBLE_EQ(zm::flops_per_token(m, recomputing).recompute, 10.0);
  EXPECT_DOUBLE_EQ(zm::flops_per_token(m, recomputing).model(), model);
  EXPECT_DOUBLE_EQ(zm::flops_per_token(m, recomputing).hardware(), model + 10.0);
}

// The model counts the real vocabulary; the head's padded rows are hardware work.
TEST(Flops, VocabularyPaddingIsHardwareWork) {
  zm::ModelConfig m = tiny();
  m.vocab = 200;  // padded to 256: 56 rows of 64
  const zm::FlopsPerToken f = zm::flops_per_token(m, plain);
  EXPECT_DOUBLE_EQ(f.dense, 6.0 * (116480 - 56 * 64));
  EXPECT_DOUBLE_EQ(f.padding, 6.0 * 64 * 56);
  EXPECT_DOUBLE_EQ(f.hardware(), f.model() + f.padding);
}

// GPT-2 124M: 124,439,808 parameters (with the 1024 x 768 position embedding), so 6N uses
// 123,653,376; attention adds 12 x 12 x 1024 x 768 per token.
TEST(Flops, Gpt2SmallKnownSixN) {
  zm::ModelConfig m;
  m.layers = 12;
  m.heads = 12;
  m.dim = 768;
  m.vocab = 50257;
  m.seq_len = 1024;
  ASSERT_EQ(zm::ParamLayout(m).real_param_count(), 124439808);
  const zm::FlopsPerToken f = zm::flops_per_token(m, plain);
  EXPECT_DOUBLE_EQ(f.dense, 741920256.0);
  EXPECT_DOUBLE_EQ(f.attention, 113246208.0);
  EXPECT_DOUBLE_EQ(f.model(), 855166464.0);
  // 8 x 1024 tokens on 8 ranks: 7.005523673088e12 FLOPs a step, an eighth per rank.
  const zm::StepFlops step = zm::step_flops(m, plain, 8.0 * 1024, 8);
  EXPECT_DOUBLE_EQ(step.model, 7005523673088.0);
  EXPECT_DOUBLE_EQ(step.model_per_rank() * 8, step.model);
  EXPECT_DOUBLE_EQ(step.hardware, 8.0 * 1024 * f.hardware());
}

}  // namespace
