// The sum of quantized segments (kernels::dequantize_sum, qgZ's reduction): each segment's
// dequantized values added in segment order, with the same bits at any team shape, onto the output
// when accumulating, and over every stride-th segment.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "common/kernel_test_util.hpp"
#include "common/test_team_shape.hpp"
#include "modules/zeropp/quantize.hpp"

namespace {

namespace k = zm::kernels;
using zm::testing::DeviceVec;

// S segments of n values quantized end to end in `bits`, each from its own data.
struct PackedSegments {
  std::vector<std::vector<float>> dequantized;  // each segment alone, through dequantize_int*
  DeviceVec<float> packed{1};
};

PackedSegments pack_segments(int64_t segments, int64_t n, int64_t block, int bits) {
  const k::TeamShape shape = zm::testing::test_team_shape();
  const k::QuantizedSegment layout{n, block, bits};
  PackedSegments out;
  out.packed = DeviceVec<float>(static_cast<size_t>(segments * layout.bytes() / 4));
  for (int64_t s = 0; s < segments; ++s) {
    const std::vector<float> x =
        zm::testing::random_vector<float>(static_cast<size_t>(n), 40 + static_cast<unsigned>(s));
    DeviceVec<float> in(x), back(x.size());
    float* segment = out.packed.data() + s * layout.bytes() / 4;
    if (bits == 8) {
      k::quantize_int8(shape, in.data(), n, block, segment);
      k::dequantize_int8(shape, segment, 1, n, block, back.data());
    } else {
      k::quantize_int4(shape, in.data(), n, block, segment);
      k::dequantize_int4(shape, segment, 1, n, block, back.data());
    }
    out.dequantized.push_back(back.get());
  }
  return out;
}

// The sum is each segment's dequantized values added in segment order (up to a fused
// multiply-add the compiler may form: 4 eps of the terms' magnitudes), onto `out` when
// accumulating; and bitwise the same at every team shape.
TEST(QuantizedSum, AddsTheSegmentsInOrderWithTheSameBitsAtAnyTeamShape) {
  std::vector<k::TeamShape> shapes = {zm::testing::test_team_shape(), {1, 1}};
  if (zm::ExecSpace().concurrency() >= 2) shapes.push_back({2, 4});
  const float eps = std::numeric_limits<float>::epsilon();
  const int64_t segments = 4, n = 1001, block = 64;
  for (int bits : {8, 4})
    for (bool accumulate : {false, true}) {
      SCOPED_TRACE(::testing::Message() << bits << " bits, accumulate " << accumulate);
      const PackedSegments p = pack_segments(segments, n, block, bits);
      const std::vector<float> start = zm::testing::random_vector<float>(static_cast<size_t>(n), 9);
      std::vector<std::vector<float>> got;
      for (const k::TeamShape& shape : shapes) {
        DeviceVec<float> out(start);
        k::dequantize_sum(shape, p.packed.data(), segments, n, block, bits, out.data(), accumulate);
        got.push_back(out.get());
      }
      for (size_t i = 1; i < got.size(); ++i) EXPECT_EQ(got[i], got[0]) << "shape " << i;
      for (int64_t e = 0; e < n; ++e) {
        float sum = accumulate ? start[static_cast<size_t>(e)] : 0.0f, magnitude = std::fabs(sum);
        for (int64_t s = 0; s < segments; ++s) {
          sum += p.dequantized[static_cast<size_t>(s)][static_cast<size_t>(e)];
          magnitude += std::fabs(p.dequantized[static_cast<size_t>(s)][static_cast<size_t>(e)]);
        }
        ASSERT_NEAR(got[0][static_cast<size_t>(e)], sum, 4.0f * eps * magnitude) << "element " << e;
      }
    }
}

// Every stride-th segment (qgZ's hop within a node: one destination's contributions among
// several destinations'): bitwise the sum of those segments alone, laid end to end.
TEST(QuantizedSum, StrideTakesEveryStrideThSegment) {
  const k::TeamShape shape = zm::testing::test_team_shape();
  const int64_t segments = 6, n = 333, block = 32, stride = 3;
  for (int bits : {8, 4}) {
    SCOPED_TRACE(::testing::Message() << bits << " bits");
    const PackedSegments all = pack_segments(segments, n, block, bits);
    const int64_t floats = k::QuantizedSegment{n, block, bits}.bytes() / 4;
    for (int64_t first = 0; first < stride; ++first) {
      // Segments first, first + stride: copied end to end, summed without a stride.
      const std::vector<float> packed = all.packed.get();
      std::vector<float> picked;
      for (int64_t s = first; s < segments; s += stride)
        picked.insert(picked.end(), packed.begin() + s * floats, packed.begin() + (s + 1) * floats);
      DeviceVec<float> end_to_end(picked), expected(static_cast<size_t>(n)),
          got(static_cast<size_t>(n));
      k::dequantize_sum(shape, end_to_end.data(), segments / stride, n, block, bits,
                        expected.data());
      k::dequantize_sum(shape, all.packed.data() + first * floats, segments / stride, n, block,
                        bits, got.data(), false, stride);
      EXPECT_EQ(got.get(), expected.get()) << "first segment " << first;
    }
  }
}

}  // namespace
