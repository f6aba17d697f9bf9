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

// A tensor of shape `shape` cut along dimension `dim` in `groups` groups into `slices` slices,
// as a layout of a model held in slices describes it (model/layout.hpp).
zm::TensorInfo cut_tensor(std::vector<int64_t> shape, int dim, int64_t groups, int slices) {
  zm::TensorInfo t;
  t.global_shape = shape;
  t.cut = {dim, groups};
  if (dim >= 0) shape[static_cast<size_t>(dim)] /= slices;
  t.shape = shape;
  t.size = 1;
  for (int64_t extent : shape) t.size *= extent;
  return t;
}

// The slices of a cut tensor cover the whole tensor exactly once, in order within each slice; a
// tensor held whole is whole in every slice.
TEST(Layout, SlicesTileEveryTensorOnce) {
  struct Case {
    std::vector<int64_t> shape;
    int dim;
    int64_t groups;
  };
  for (const Case& c : {Case{{12, 8}, 0, 1}, Case{{12, 8}, 0, 3}, Case{{12, 8}, 1, 1},
                        Case{{12, 8}, 1, 2}, Case{{24}, 0, 3}, Case{{12, 8}, -1, 1}}) {
    for (const int slices : {1, 2, 4}) {
      SCOPED_TRACE(::testing::Message() << "dim " << c.dim << " groups " << c.groups << " slices "
                                        << slices << " rank " << c.shape.size());
      const zm::TensorInfo t = cut_tensor(c.shape, c.dim, c.groups, slices);
      const int64_t whole =
          t.global_shape.size() > 1 ? t.global_shape[0] * t.global_shape[1] : t.global_shape[0];
      std::vector<int> hits(static_cast<size_t>(whole), 0);
      for (int r = 0; r < slices; ++r) {
        int64_t next_local = 0, last_global = -1;
        for (const zm::SliceRun& run : zm::slice_runs(t, slices, r, 0, t.size)) {
          EXPECT_EQ(run.local, next_local);
          EXPECT_GT(run.global, last_global);
          next_local += run.length;
          last_global = run.global + run.length - 1;
          for (int64_t e = 0; e < run.length; ++e) ++hits[static_cast<size_t>(run.global + e)];
        }
        EXPECT_EQ(next_local, t.size);
      }
      const int expected = zm::held_whole(t) ? slices : 1;
      EXPECT_EQ(std::count(hits.begin(), hits.end(), expected), whole);
    }
  }
}

// Dimension 1 of a (4, 6) matrix in 2 slices: each slice holds 3 columns of every row.
TEST(Layout, SliceOfColumns) {
  const zm::TensorInfo t = cut_tensor({4, 6}, 1, 1, 2);
  const std::vector<zm::SliceRun> runs = zm::slice_runs(t, 2, 1, 0, t.size);
  ASSERT_EQ(runs.size(), 4u);
  for (int64_t row = 0; row < 4; ++row) {
    EXPECT_EQ(runs[static_cast<size_t>(row)].local, 3 * row);
    EXPECT_EQ(runs[static_cast<size_t>(row)].global, 6 * row + 3);
    EXPECT_EQ(runs[static_cast<size_t>(row)].length, 3);
  }
}

// A range inside a slice maps to the same elements as the whole slice's runs restricted to it
// (what ZeRO's shards of a slice use).
TEST(Layout, SliceRunsOfASubrange) {
  for (const zm::TensorInfo& t : {cut_tensor({96, 32}, 0, 3, 2), cut_tensor({32, 128}, 1, 1, 2),
                                  cut_tensor({128}, 0, 1, 2), cut_tensor({32}, -1, 1, 2)}) {
    std::vector<int64_t> global_of(static_cast<size_t>(t.size), -1);
    for (const zm::SliceRun& run : zm::slice_runs(t, 2, 1, 0, t.size))
      for (int64_t e = 0; e < run.length; ++e)
        global_of[static_cast<size_t>(run.local + e)] = run.global + e;
    const int64_t begin = t.size / 3, end = t.size - t.size / 5;
    int64_t covered = 0;
    for (const zm::SliceRun& run : zm::slice_runs(t, 2, 1, begin, end)) {
      EXPECT_GE(run.local, begin);
      EXPECT_LE(run.local + run.length, end);
      for (int64_t e = 0; e < run.length; ++e)
        EXPECT_EQ(run.global + e, global_of[static_cast<size_t>(run.local + e)]);
      covered += run.length;
    }
    EXPECT_EQ(covered, end - begin);
  }
}

}  // namespace
