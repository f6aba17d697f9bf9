// The column sums (kernels/column_sums.hpp) give the bits of one fixed order: each column's rows
// summed from zero in ascending order within every block of kRowBlock rows, then the blocks'
// sums in ascending order. Checked against that order written out on the host, so that a run at
// any thread count and team shape (ctest runs this at OMP_NUM_THREADS=1 and 2, and with
// ZEROMINI_TEAM_SHAPE=2x4 in the OpenMP configuration) must give the same bits, and against the
// previous kernel (a team per row block), kept as a reference for this and the benchmark.
#include <gtest/gtest.h>

#include <vector>

#include "common/kernel_test_util.hpp"
#include "common/test_team_shape.hpp"
#include "kernels/column_sums_reference.hpp"

namespace {

namespace k = zm::kernels;

// Term k of element (r, c): x, and -2x for the second sum (exact, so that no contraction into a
// fused multiply-add can make the kernel and the host order differ).
float term_of(float x, int k) {
  return k == 0 ? x : -2.0f * x;
}

template <int K>
std::vector<float> host_fixed_order(const std::vector<float>& x, int64_t rows, int64_t columns) {
  std::vector<float> totals(static_cast<size_t>(K * columns), 0.0f);
  for (int k = 0; k < K; ++k)
    for (int64_t c = 0; c < columns; ++c) {
      float total = 0.0f;
      for (int64_t r0 = 0; r0 < rows; r0 += k::kRowBlock) {
        float block = 0.0f;
        for (int64_t r = r0; r < rows && r < r0 + k::kRowBlock; ++r)
          block += term_of(x[static_cast<size_t>(r * columns + c)], k);
        total += block;
      }
      totals[static_cast<size_t>(k * columns + c)] = total;
    }
  return totals;
}

// Level 1 by the current kernel (or the reference), level 2, into K x columns totals.
template <int K>
std::vector<float> device_column_sums(k::TeamShape shape, const std::vector<float>& host_x,
                                      int64_t rows, int64_t columns, bool reference) {
  zm::testing::DeviceVec<float> x(host_x);
  auto partials = zm::testing::column_partials<float>(rows, columns, K);
  zm::testing::DeviceVec<float> totals(static_cast<size_t>(K * columns));
  const float* xp = x.data();
  float* out = totals.data();
  const auto term = KOKKOS_LAMBDA(int64_t r, int64_t c, float(&t)[K]) {
    const float v = xp[r * columns + c];
    t[0] = v;
    if (K > 1) t[K - 1] = -2.0f * v;
  };
  if (reference)
    k::reference::row_block_column_sums<K>(shape, "test::row_block", rows, columns, partials.data(),
                                           term);
  else
    k::block_column_sums<K>(shape, "test::blocks_and_tiles", rows, columns, partials.data(), term);
  k::add_column_partials<K>(
      shape, "test::add_partials", rows, columns, static_cast<const float*>(partials.data()),
      KOKKOS_LAMBDA(int64_t s, int64_t c, float total) { out[s * columns + c] = total; });
  return totals.get();
}

template <int K>
void expect_fixed_order(k::TeamShape shape, int64_t rows, int64_t columns) {
  const auto x = zm::testing::random_vector<float>(static_cast<size_t>(rows * columns), 11);
  const auto expected = host_fixed_order<K>(x, rows, columns);
  EXPECT_EQ(device_column_sums<K>(shape, x, rows, columns, false), expected)
      << K << " sum(s), " << rows << " x " << columns;
  EXPECT_EQ(device_column_sums<K>(shape, x, rows, columns, true), expected)
      << "reference, " << K << " sum(s), " << rows << " x " << columns;
}

// Rows and columns around the block height and tile width: partial blocks, partial tiles, one row.
void expect_all_shapes(k::TeamShape shape) {
  for (int64_t rows : {int64_t(1), int64_t(63), k::kRowBlock, int64_t(200), int64_t(1000)})
    for (int64_t columns : {int64_t(1), int64_t(100), k::kColumnTile, int64_t(300)}) {
      expect_fixed_order<1>(shape, rows, columns);
      expect_fixed_order<2>(shape, rows, columns);
    }
}

TEST(ColumnSums, TheFixedOrderBitwise) {
  expect_all_shapes(zm::testing::test_team_shape());
}

// The team code path (a GPU's) where the backend allows teams of several threads.
TEST(ColumnSums, TheFixedOrderBitwiseInTeamsOfSeveralThreads) {
  if (zm::ExecSpace().concurrency() < 2)
    GTEST_SKIP() << "one thread: no team of several (the OpenMP configuration runs it)";
  expect_all_shapes({2, 4});
}

}  // namespace
