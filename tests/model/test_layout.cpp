#include <gtest/gtest.h>

#include <algorithm>

#include "core/deck.hpp"
#include "model/layout.hpp"
#include "zero/partition.hpp"

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

TEST(Layout, Gpt2SmallHasTheFamousParameterCount) {
  zm::ParamLayout layout(gpt2_124m());
  EXPECT_EQ(layout.real_param_count(), 124439808);
  EXPECT_EQ(layout.total(), 124439808 + (50304 - 50257) * 768);
  EXPECT_EQ(layout.num_units(), 14);
}

TEST(Layout, UnitsAreContiguousAndTensorsTileThem) {
  zm::ModelConfig m;
  m.layers = 3;
  m.dim = 32;
  m.heads = 4;
  m.vocab = 97;
  m.seq_len = 16;
  zm::ParamLayout layout(m);
  int64_t expected_offset = 0;
  for (int u = 0; u < layout.num_units(); ++u) {
    const auto& unit = layout.unit(u);
    EXPECT_EQ(unit.offset, expected_offset);
    int64_t inside = 0;
    for (int t : unit.tensors) {
      const auto& tensor = layout.tensors()[static_cast<size_t>(t)];
      EXPECT_EQ(tensor.unit, u);
      EXPECT_EQ(tensor.offset, inside);
      inside += tensor.size;
    }
    EXPECT_EQ(inside, unit.size);
    expected_offset += unit.size;
  }
  EXPECT_EQ(expected_offset, layout.total());
  // Block offsets are the same in every block.
  EXPECT_EQ(layout.block().ln1_w, 0);
  EXPECT_EQ(layout.block().qkv_w, 2 * 32);
  EXPECT_EQ(layout.unit(1).size, 12 * 32 * 32 + 13 * 32);
  EXPECT_EQ(layout.wpe_offset(), 128 * 32);
}

TEST(Partition, EveryRankCountSplitsEveryUnitEvenlyWithAlignedShards) {
  zm::ModelConfig m;
  m.layers = 2;
  m.dim = 32;
  m.heads = 4;
  m.vocab = 97;
  m.seq_len = 16;
  zm::ParamLayout layout(m);
  for (int ranks = 1; ranks <= 7; ++ranks) {
    zm::Partition partition(layout, ranks);
    int64_t padded = 0, shard = 0;
    for (int u = 0; u < partition.num_units(); ++u) {
      const auto& p = partition.unit(u);
      EXPECT_GE(p.padded, p.size);
      EXPECT_EQ(p.padded, p.shard * ranks);
      EXPECT_EQ(p.shard % zm::kShardAlign, 0);
      EXPECT_LT(p.padded - p.size, ranks * zm::kShardAlign);  // no more padding than needed
      EXPECT_EQ(p.padded_offset, padded);
      EXPECT_EQ(p.shard_offset, shard);
      padded += p.padded;
      shard += p.shard;
      // Owned ranges tile the unit in rank order.
      int64_t covered = 0;
      for (int r = 0; r < ranks; ++r) {
        auto [begin, end] = partition.owned_range(u, r);
        EXPECT_EQ(begin, covered);
        covered = end;
      }
      EXPECT_EQ(covered, p.size);
    }
    EXPECT_EQ(partition.padded_total(), padded);
    EXPECT_EQ(partition.shard_total(), shard);
  }
}

TEST(Partition, SegmentsCoverARangeExactly) {
  zm::ModelConfig m;
  m.layers = 1;
  m.dim = 32;
  m.heads = 4;
  m.vocab = 97;
  m.seq_len = 16;
  zm::ParamLayout layout(m);
  zm::Partition partition(layout, 3);
  const int u = 1;
  auto [begin, end] = partition.owned_range(u, 1);
  auto segments = partition.segments(u, begin, end);
  ASSERT_FALSE(segments.empty());
  int64_t at = begin;
  for (const auto& s : segments) {
    EXPECT_EQ(s.unit_offset, at);
    const auto& t = layout.tensors()[static_cast<size_t>(s.tensor)];
    EXPECT_EQ(t.offset + s.tensor_offset, s.unit_offset);
    EXPECT_LE(s.tensor_offset + s.length, t.size);
    at += s.length;
  }
  EXPECT_EQ(at, end);
}

}  // namespace

namespace {

// Tensor parallelism: the tp slices of every split tensor cover the whole tensor exactly once,
// the replicated tensors are whole on every rank, and the whole model's count does not change.
TEST(Layout, TensorParallelSlicesTileEveryTensorOnce) {
  const zm::ModelConfig m = gpt2_124m();
  const zm::ParamLayout whole(m);
  for (const int tp : {2, 4, 12}) {
    SCOPED_TRACE(tp);
    const zm::ParamLayout slices(m, tp);
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
        for (const zm::TpRun& run : zm::tp_runs(t, tp, r, 0, t.size))
          for (int64_t e = 0; e < run.length; ++e) ++hits[static_cast<size_t>(run.global + e)];
      const int expected = t.split == zm::TpSplit::Replicated ? tp : 1;
      EXPECT_EQ(std::count(hits.begin(), hits.end(), expected), w.size);
      (t.split == zm::TpSplit::Replicated ? replicated_elements : split_elements) += t.size;
    }
    // Megatron's split: the matrices, their column-parallel biases and wte by tp; LayerNorms,
    // wpe and the row-parallel biases whole.
    EXPECT_EQ(split_elements * tp + replicated_elements, whole.total());
  }
}

// A range inside a slice maps to the same elements as the whole slice's runs restricted to it
// (what ZeRO's shards of a slice use).
TEST(Layout, TensorParallelRunsOfASubrange) {
  zm::ModelConfig m;
  m.layers = 1;
  m.dim = 32;
  m.heads = 4;
  m.vocab = 97;
  m.seq_len = 16;
  const zm::ParamLayout slices(m, 2);
  for (const zm::TensorInfo& t : slices.tensors()) {
    std::vector<int64_t> global_of(static_cast<size_t>(t.size), -1);
    for (const zm::TpRun& run : zm::tp_runs(t, 2, 1, 0, t.size))
      for (int64_t e = 0; e < run.length; ++e)
        global_of[static_cast<size_t>(run.local + e)] = run.global + e;
    const int64_t begin = t.size / 3, end = t.size - t.size / 5;
    int64_t covered = 0;
    for (const zm::TpRun& run : zm::tp_runs(t, 2, 1, begin, end)) {
      EXPECT_GE(run.local, begin);
      EXPECT_LE(run.local + run.length, end);
      for (int64_t e = 0; e < run.length; ++e)
        EXPECT_EQ(run.global + e, global_of[static_cast<size_t>(run.local + e)]) << t.name;
      covered += run.length;
    }
    EXPECT_EQ(covered, end - begin) << t.name;
  }
}

}  // namespace
