// Megatron's cut of GPT-2 (modules/tensor_parallel/megatron.hpp) as the layout holds it: the tp
// slices of every split tensor cover the whole tensor exactly once, the tensors held whole are
// whole on every rank, the whole model's count does not change, and each rank computes with its
// share of the heads and of the MLP's width.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/deck.hpp"
#include "model/layout.hpp"
#include "modules/tensor_parallel/megatron.hpp"

namespace {

zm::ModelConfig gpt2_124m() {
  zm::ModelConfig m;
  m.layers = 12;
  m.heads = 12;
  m.dim = 768;
  m.vocab = 50257;
  m.seq_len = 1024;
  return m;
}

TEST(MegatronLayout, SlicesTileEveryTensorOnce) {
  const zm::ModelConfig m = gpt2_124m();
  const zm::ParamLayout whole(m);
  for (const int tp : {2, 4, 12}) {
    SCOPED_TRACE(tp);
    const zm::ParamLayout slices(m, &zm::megatron_scheme(), tp);
    EXPECT_EQ(slices.global_total(), whole.total());
    EXPECT_EQ(slices.real_param_count(), whole.real_param_count());
    ASSERT_EQ(slices.tensors().size(), whole.tensors().size());
    int64_t split_elements = 0, replicated_elements = 0;
    for (size_t i = 0; i < whole.tensors().size(); ++i) {
      const zm::TensorInfo& t = slices.tensors()[i];
      const zm::TensorInfo& w = whole.tensors()[i];
      SCOPED_TRACE(t.name);
      EXPECT_EQ(t.global_shape, w.shape);
      EXPECT_EQ(slices.unit(t.unit).global_offset + t.global_offset,
                whole.unit(w.unit).offset + w.offset);
      std::vector<int> hits(static_cast<size_t>(w.size), 0);
      for (int r = 0; r < tp; ++r)
        for (const zm::SliceRun& run : zm::slice_runs(t, tp, r, 0, t.size))
          for (int64_t e = 0; e < run.length; ++e) ++hits[static_cast<size_t>(run.global + e)];
      const int expected = zm::held_whole(t) ? tp : 1;
      EXPECT_EQ(std::count(hits.begin(), hits.end(), expected), w.size);
      (zm::held_whole(t) ? replicated_elements : split_elements) += t.size;
    }
    // Megatron's split: the matrices, their column-parallel biases and wte by tp; LayerNorms,
    // wpe and the row-parallel biases whole.
    EXPECT_EQ(split_elements * tp + replicated_elements, whole.total());
    EXPECT_EQ(slices.widths().heads, m.heads / tp);
    EXPECT_EQ(slices.widths().attention, m.dim / tp);
    EXPECT_EQ(slices.widths().mlp, 4 * m.dim / tp);
    EXPECT_EQ(slices.vocab_rows(), m.padded_vocab() / tp);
  }
}

// Which tensors Megatron cuts, and how.
TEST(MegatronLayout, CutsByRole) {
  const zm::ModelParallelScheme& s = zm::megatron_scheme();
  EXPECT_EQ(s.cut("wte.weight").dim, 0);
  EXPECT_EQ(s.cut("h.0.attn.c_attn.weight").groups, 3);
  EXPECT_EQ(s.cut("h.0.attn.c_attn.bias").groups, 3);
  EXPECT_EQ(s.cut("h.5.attn.c_proj.weight").dim, 1);
  EXPECT_EQ(s.cut("h.5.mlp.c_fc.bias").dim, 0);
  EXPECT_EQ(s.cut("h.5.mlp.c_proj.weight").dim, 1);
  for (const char* whole : {"wpe.weight", "h.1.ln_1.weight", "h.1.attn.c_proj.bias",
                            "h.1.mlp.c_proj.bias", "ln_f.bias"})
    EXPECT_LT(s.cut(whole).dim, 0) << whole;
}

}  // namespace
