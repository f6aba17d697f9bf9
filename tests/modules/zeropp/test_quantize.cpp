// The int8 and int4 block quantization (kernels/quantize.hpp): the error bound of round to
// nearest, the unbiasedness of stochastic rounding over many seeds, and the bits of a host
// reference at any team shape (ctest also runs this with ZEROMINI_TEAM_SHAPE=2x4 in the OpenMP
// configuration). The bits hold on a GPU too, where nvcc contracts multiply-adds: the codes take
// a maximum, two correctly rounded divisions and one addition (v + 1/2), no product that an
// addition could fuse with, so the kernel and the host code below round alike.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "common/kernel_test_util.hpp"
#include "common/test_team_shape.hpp"
#include "modules/zeropp/quantize.hpp"

namespace {

namespace k = zm::kernels;
using zm::testing::DeviceVec;

struct Unpacked {
  std::vector<int8_t> codes;
  std::vector<float> scales;
};

// The segment of x, quantized on the device and read back as codes and scales.
Unpacked quantize_on_device(k::TeamShape shape, const std::vector<float>& x, int64_t block,
                            k::Rounding rounding = k::Rounding::Nearest, uint64_t seed = 0,
                            uint64_t first_index = 0) {
  const k::QuantizedSegment layout{static_cast<int64_t>(x.size()), block};
  DeviceVec<float> in(x);
  DeviceVec<float> segment(static_cast<size_t>(layout.bytes() / 4));
  k::quantize_int8(shape, in.data(), layout.values, block, segment.data(), rounding, seed,
                   first_index);
  const std::vector<float> words = segment.get();
  Unpacked out{std::vector<int8_t>(x.size()), std::vector<float>(layout.blocks())};
  std::memcpy(out.codes.data(), words.data(), x.size());
  std::memcpy(out.scales.data(), reinterpret_cast<const char*>(words.data()) + layout.code_bytes(),
              out.scales.size() * 4);
  return out;
}

std::vector<float> dequantize_on_device(k::TeamShape shape, const std::vector<float>& x,
                                        int64_t block, k::Rounding rounding, uint64_t seed) {
  const k::QuantizedSegment layout{static_cast<int64_t>(x.size()), block};
  DeviceVec<float> in(x);
  DeviceVec<float> segment(static_cast<size_t>(layout.bytes() / 4));
  DeviceVec<float> out(x.size());
  k::quantize_int8(shape, in.data(), layout.values, block, segment.data(), rounding, seed);
  k::dequantize_int8(shape, segment.data(), 1, layout.values, block, out.data());
  return out.get();
}

// The format written out on the host: scale = max|x| / 127, code = floor(x / scale + 1/2).
Unpacked host_nearest(const std::vector<float>& x, int64_t block) {
  Unpacked out;
  for (size_t b = 0; b < x.size(); b += static_cast<size_t>(block)) {
    const size_t end = std::min(x.size(), b + static_cast<size_t>(block));
    float maximum = 0.0f;
    for (size_t i = b; i < end; ++i) maximum = std::max(maximum, std::fabs(x[i]));
    const float scale = maximum / 127.0f;
    out.scales.push_back(scale);
    for (size_t i = b; i < end; ++i) {
      const float v = scale > 0.0f ? x[i] / scale : 0.0f;
      out.codes.push_back(
          static_cast<int8_t>(std::min(127.0f, std::max(-127.0f, std::floor(v + 0.5f)))));
    }
  }
  return out;
}

// Values with a zero block, a block of one repeated value and outliers among small values.
std::vector<float> test_values(size_t n) {
  std::vector<float> x = zm::testing::random_vector<float>(n, 5, 0.02);
  for (size_t i = 0; i < n && i < 64; ++i) x[i] = 0.0f;
  for (size_t i = 64; i < n && i < 128; ++i) x[i] = -3.5f;
  for (size_t i = 200; i < n; i += 997) x[i] *= 1000.0f;
  return x;
}

constexpr int64_t kSizes[] = {1, 63, 64, 1000, 4099};
constexpr int64_t kBlocks[] = {1, 64, 2048};

TEST(QuantizeInt8, CodesAndScalesAreTheHostReferenceBitwiseAtAnyTeamShape) {
  std::vector<k::TeamShape> shapes = {zm::testing::test_team_shape(), {1, 1}};
  if (zm::ExecSpace().concurrency() >= 2) shapes.push_back({2, 4});
  for (int64_t n : kSizes)
    for (int64_t block : kBlocks) {
      const std::vector<float> x = test_values(static_cast<size_t>(n));
      const Unpacked expected = host_nearest(x, block);
      for (const k::TeamShape& shape : shapes) {
        const Unpacked got = quantize_on_device(shape, x, block);
        EXPECT_EQ(got.codes, expected.codes) << n << " values, block " << block;
        EXPECT_EQ(got.scales, expected.scales) << n << " values, block " << block;
      }
    }
}

// |x - q scale| <= scale / 2 up to float arithmetic: x / scale and q * scale are each rounded
// once (relative 2^-24 of at most 127 scale), hence the bound scale (1/2 + 256 eps).
TEST(QuantizeInt8, NearestErrorIsAtMostHalfAScalePerElement) {
  const k::TeamShape shape = zm::testing::test_team_shape();
  const float eps = std::numeric_limits<float>::epsilon();
  for (int64_t n : kSizes)
    for (int64_t block : kBlocks) {
      const std::vector<float> x = test_values(static_cast<size_t>(n));
      const std::vector<float> back =
          dequantize_on_device(shape, x, block, k::Rounding::Nearest, 0);
      const Unpacked q = quantize_on_device(shape, x, block);
      int64_t at_full_scale = 0;
      for (int64_t i = 0; i < n; ++i) {
        const float scale = q.scales[static_cast<size_t>(i / block)];
        ASSERT_LE(std::fabs(x[i] - back[i]), scale * (0.5f + 256.0f * eps))
            << "element " << i << " of " << n << ", block " << block << ", scale " << scale;
        at_full_scale += std::abs(q.codes[static_cast<size_t>(i)]) == 127;
      }
      // Every block that is not all zero uses the full range at its largest element.
      int64_t nonzero_blocks = 0;
      for (float s : q.scales) nonzero_blocks += s > 0.0f;
      EXPECT_GE(at_full_scale, nonzero_blocks);
    }
}

// Values at v = x / scale = k + 1/4 (and a block maximum of 127): round to nearest is biased by
// -scale / 4 on them, stochastic rounding is not. Over D seeds each element's mean has a standard
// error of at most scale / (2 sqrt(D)); the test allows 5 of them per element, and 5 of
// scale / (2 sqrt(D n)) for the mean over all n elements.
TEST(QuantizeInt8, StochasticRoundingIsUnbiasedOverManySeeds) {
  const k::TeamShape shape = zm::testing::test_team_shape();
  const int64_t n = 4096, block = 256;
  const int draws = 2000;
  std::vector<float> x(static_cast<size_t>(n));
  const float scale = 0.01f;
  for (int64_t i = 0; i < n; ++i) {
    const float v = (i % block == 0) ? 127.0f : static_cast<float>(i % 250 - 125) + 0.25f;
    x[static_cast<size_t>(i)] = v * scale;
  }
  std::vector<double> mean(static_cast<size_t>(n), 0.0);
  for (int d = 0; d < draws; ++d) {
    const std::vector<float> back =
        dequantize_on_device(shape, x, block, k::Rounding::Stochastic, 1000 + d);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_LT(std::fabs(x[i] - back[i]), scale * 1.0001f) << "more than one step, element " << i;
      mean[static_cast<size_t>(i)] += back[static_cast<size_t>(i)] / draws;
    }
  }
  const double per_element = 5.0 * scale / (2.0 * std::sqrt(double(draws)));
  double total_bias = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double bias = mean[static_cast<size_t>(i)] - x[static_cast<size_t>(i)];
    ASSERT_LE(std::fabs(bias), per_element) << "element " << i;
    total_bias += bias / n;
  }
  EXPECT_LE(std::fabs(total_bias), 5.0 * scale / (2.0 * std::sqrt(double(draws) * n)));
  // The same values to nearest: biased by -scale / 4 on all but the block maxima.
  const std::vector<float> nearest = dequantize_on_device(shape, x, block, k::Rounding::Nearest, 0);
  double nearest_bias = 0.0;
  for (int64_t i = 0; i < n; ++i) nearest_bias += (nearest[i] - x[i]) / n;
  EXPECT_LT(nearest_bias, -0.2 * scale);
}

// The uniforms are keyed by (seed, index): the same seed gives the same codes at any team shape,
// another seed or another index range different ones.
TEST(QuantizeInt8, StochasticCodesDependOnSeedAndIndexOnly) {
  const std::vector<float> x = test_values(4099);
  const auto st = k::Rounding::Stochastic;
  const Unpacked a = quantize_on_device(zm::testing::test_team_shape(), x, 64, st, 7);
  EXPECT_EQ(quantize_on_device({1, 1}, x, 64, st, 7).codes, a.codes);
  if (zm::ExecSpace().concurrency() >= 2) {
    EXPECT_EQ(quantize_on_device({2, 4}, x, 64, st, 7).codes, a.codes);
  }
  EXPECT_NE(quantize_on_device({1, 1}, x, 64, st, 8).codes, a.codes);
  EXPECT_NE(quantize_on_device({1, 1}, x, 64, st, 7, 4099).codes, a.codes);
  EXPECT_EQ(quantize_on_device({1, 1}, x, 64, st, 7).scales, host_nearest(x, 64).scales);
}

// Several segments end to end (an all-gather's output) unpack each into its own range.
TEST(QuantizeInt8, DequantizesConsecutiveSegments) {
  const k::TeamShape shape = zm::testing::test_team_shape();
  const int64_t n = 1001, block = 128, segments = 3;
  const k::QuantizedSegment layout{n, block};
  ASSERT_EQ(layout.bytes() % 4, 0);
  std::vector<float> all = test_values(static_cast<size_t>(n * segments));
  DeviceVec<float> in(all);
  DeviceVec<float> packed(static_cast<size_t>(segments * layout.bytes() / 4));
  for (int64_t s = 0; s < segments; ++s)
    k::quantize_int8(shape, in.data() + s * n, n, block, packed.data() + s * layout.bytes() / 4);
  DeviceVec<float> out(all.size());
  k::dequantize_int8(shape, packed.data(), segments, n, block, out.data());
  const std::vector<float> got = out.get();
  for (int64_t s = 0; s < segments; ++s) {
    const std::vector<float> part(all.begin() + s * n, all.begin() + (s + 1) * n);
    const std::vector<float> alone =
        dequantize_on_device(shape, part, block, k::Rounding::Nearest, 0);
    EXPECT_EQ(std::vector<float>(got.begin() + s * n, got.begin() + (s + 1) * n), alone)
        << "segment " << s;
  }
}

// --- int4: codes in [-7, 7], two per byte ---------------------------------------------------

struct Unpacked4 {
  std::vector<int> codes;
  std::vector<float> scales;
};

Unpacked4 quantize4_on_device(k::TeamShape shape, const std::vector<float>& x, int64_t block,
                              k::Rounding rounding = k::Rounding::Nearest, uint64_t seed = 0) {
  const k::QuantizedSegment layout{static_cast<int64_t>(x.size()), block, 4};
  DeviceVec<float> in(x);
  DeviceVec<float> segment(static_cast<size_t>(layout.bytes() / 4));
  k::quantize_int4(shape, in.data(), layout.values, block, segment.data(), rounding, seed);
  const std::vector<float> words = segment.get();
  const auto* bytes = reinterpret_cast<const uint8_t*>(words.data());
  Unpacked4 out{{}, std::vector<float>(layout.blocks())};
  for (size_t i = 0; i < x.size(); ++i) {
    const int nibble = i % 2 ? bytes[i / 2] >> 4 : bytes[i / 2] & 0xF;
    out.codes.push_back(nibble >= 8 ? nibble - 16 : nibble);
  }
  std::memcpy(out.scales.data(), bytes + layout.code_bytes(), out.scales.size() * 4);
  return out;
}

std::vector<float> dequantize4_on_device(k::TeamShape shape, const std::vector<float>& x,
                                         int64_t block, k::Rounding rounding, uint64_t seed) {
  const k::QuantizedSegment layout{static_cast<int64_t>(x.size()), block, 4};
  DeviceVec<float> in(x);
  DeviceVec<float> segment(static_cast<size_t>(layout.bytes() / 4));
  DeviceVec<float> out(x.size());
  k::quantize_int4(shape, in.data(), layout.values, block, segment.data(), rounding, seed);
  k::dequantize_int4(shape, segment.data(), 1, layout.values, block, out.data());
  return out.get();
}

Unpacked4 host_nearest4(const std::vector<float>& x, int64_t block) {
  Unpacked4 out;
  for (size_t b = 0; b < x.size(); b += static_cast<size_t>(block)) {
    const size_t end = std::min(x.size(), b + static_cast<size_t>(block));
    float maximum = 0.0f;
    for (size_t i = b; i < end; ++i) maximum = std::max(maximum, std::fabs(x[i]));
    const float scale = maximum / 7.0f;
    out.scales.push_back(scale);
    for (size_t i = b; i < end; ++i) {
      const float v = scale > 0.0f ? x[i] / scale : 0.0f;
      out.codes.push_back(static_cast<int>(std::min(7.0f, std::max(-7.0f, std::floor(v + 0.5f)))));
    }
  }
  return out;
}

constexpr int64_t kEvenBlocks[] = {2, 64, 2048};

TEST(QuantizeInt4, CodesAndScalesAreTheHostReferenceBitwiseAtAnyTeamShape) {
  std::vector<k::TeamShape> shapes = {zm::testing::test_team_shape(), {1, 1}};
  if (zm::ExecSpace().concurrency() >= 2) shapes.push_back({2, 4});
  for (int64_t n : kSizes)
    for (int64_t block : kEvenBlocks) {
      const std::vector<float> x = test_values(static_cast<size_t>(n));
      const Unpacked4 expected = host_nearest4(x, block);
      for (const k::TeamShape& shape : shapes) {
        const Unpacked4 got = quantize4_on_device(shape, x, block);
        EXPECT_EQ(got.codes, expected.codes) << n << " values, block " << block;
        EXPECT_EQ(got.scales, expected.scales) << n << " values, block " << block;
      }
    }
}

// As for int8, with codes of at most 7: the bound is scale (1/2 + 16 eps).
TEST(QuantizeInt4, NearestErrorIsAtMostHalfAScalePerElement) {
  const k::TeamShape shape = zm::testing::test_team_shape();
  const float eps = std::numeric_limits<float>::epsilon();
  for (int64_t n : kSizes)
    for (int64_t block : kEvenBlocks) {
      const std::vector<float> x = test_values(static_cast<size_t>(n));
      const std::vector<float> back =
          dequantize4_on_device(shape, x, block, k::Rounding::Nearest, 0);
      const Unpacked4 q = quantize4_on_device(shape, x, block);
      for (int64_t i = 0; i < n; ++i) {
        const float scale = q.scales[static_cast<size_t>(i / block)];
        ASSERT_LE(std::fabs(x[i] - back[i]), scale * (0.5f + 16.0f * eps))
            << "element " << i << " of " << n << ", block " << block;
        ASSERT_LE(std::abs(q.codes[static_cast<size_t>(i)]), 7);
      }
    }
}

// Values at v = k + 1/4 with k in [-6, 6] (and 7 at each block's start): unbiased over D seeds
// within 5 standard errors per element, as for int8; round to nearest biased by -scale / 4.
TEST(QuantizeInt4, StochasticRoundingIsUnbiasedOverManySeeds) {
  const k::TeamShape shape = zm::testing::test_team_shape();
  const int64_t n = 2048, block = 64;
  const int draws = 2000;
  const float scale = 0.01f;
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    x[static_cast<size_t>(i)] =
        scale * ((i % block == 0) ? 7.0f : static_cast<float>(i % 13 - 6) + 0.25f);
  std::vector<double> mean(static_cast<size_t>(n), 0.0);
  for (int d = 0; d < draws; ++d) {
    const std::vector<float> back =
        dequantize4_on_device(shape, x, block, k::Rounding::Stochastic, 500 + d);
    for (int64_t i = 0; i < n; ++i)
      mean[static_cast<size_t>(i)] += back[static_cast<size_t>(i)] / draws;
  }
  const double per_element = 5.0 * scale / (2.0 * std::sqrt(double(draws)));
  for (int64_t i = 0; i < n; ++i)
    ASSERT_LE(std::fabs(mean[static_cast<size_t>(i)] - x[static_cast<size_t>(i)]), per_element)
        << "element " << i;
  const std::vector<float> nearest =
      dequantize4_on_device(shape, x, block, k::Rounding::Nearest, 0);
  double nearest_bias = 0.0;
  for (int64_t i = 0; i < n; ++i) nearest_bias += (nearest[i] - x[i]) / n;
  EXPECT_LT(nearest_bias, -0.2 * scale);
}

TEST(QuantizeInt4, SegmentHoldsTwoCodesPerByte) {
  EXPECT_EQ((k::QuantizedSegment{1001, 64, 4}.code_bytes()), 504);  // 501 bytes, padded to 4
  EXPECT_EQ((k::QuantizedSegment{1001, 64, 4}.scale_bytes()), 4 * 16);
  EXPECT_EQ((k::QuantizedSegment{1001, 64, 8}.code_bytes()), 1004);
}

}  // namespace
