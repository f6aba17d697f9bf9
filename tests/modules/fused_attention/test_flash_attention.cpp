// Fused attention (flash_attention.hpp) against the reference kernels (kernels/attention.hpp):
// the output and the q, k and v gradients in fp32 to 1e-5 relative, on sequences of one tile, of
// many and of a ragged last tile, at several head sizes; bitwise the same run after run;
// Overwrite equal to accumulating into zeros; with a bfloat16 type, bf16 near fp32; the tiles
// chosen from the scratch a device gives, and two tile sizes forced on one device: forward within
// a bound argued below, backward bitwise.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/kernel_test_util.hpp"
#include "common/test_team_shape.hpp"
#include "kernels/attention.hpp"
#include "modules/fused_attention/flash_attention.hpp"
#include "modules/fused_attention/flash_plan.hpp"

namespace {

using zm::testing::DeviceVec;
using zm::testing::random_vector;
namespace k = zm::kernels;

struct Shape {
  int64_t B, T, C, NH;
};

// What either path gives for one forward and backward: the output, and dqkv split into its
// q, k and v thirds.
struct Results {
  std::vector<float> out, dq, dk, dv;
};

struct Inputs {
  explicit Inputs(const Shape& s)
      : qkv(random_vector<float>(s.B * s.T * 3 * s.C, 21, 1.5)),
        dout(random_vector<float>(s.B * s.T * s.C, 22)) {}
  std::vector<float> qkv, dout;
};

Results split(const Shape& s, std::vector<float> out, const std::vector<float>& dqkv) {
  Results r;
  r.out = std::move(out);
  for (int64_t row = 0; row < s.B * s.T; ++row)
    for (int third = 0; third < 3; ++third) {
      auto first = dqkv.begin() + row * 3 * s.C + third * s.C;
      std::vector<float>& dst = third == 0 ? r.dq : (third == 1 ? r.dk : r.dv);
      dst.insert(dst.end(), first, first + s.C);
    }
  return r;
}

Results run_reference(const Shape& s, const Inputs& in) {
  const size_t heads = s.B * s.T * s.C, scores = s.B * s.NH * s.T * s.T;
  DeviceVec<float> qkv(in.qkv), dout(in.dout), out(heads), dqkv(3 * heads);
  DeviceVec<float> q(heads), kk(heads), v(heads), att(scores), y(heads), datt(scores), dq(heads),
      dk(heads), dv(heads);
  const k::TeamShape shape = zm::testing::test_team_shape();
  k::attention_forward<float>(shape, out.data(), {q.data(), kk.data(), v.data(), att.data()},
                              {y.data(), nullptr, nullptr, nullptr, nullptr}, qkv.data(), s.B, s.T,
                              s.C, s.NH);
  k::attention_backward<float>(
      shape, dqkv.data(), {y.data(), datt.data(), dq.data(), dk.data(), dv.data()}, dout.data(),
      {q.data(), kk.data(), v.data(), att.data()}, s.B, s.T, s.C, s.NH, k::GradWrite::Overwrite);
  return split(s, out.get(), dqkv.get());
}

// The fused path; `lse` receives the saved log-sum-exp, dqkv starts as `dqkv_start`.
template <typename T>
Results run_fused(const Shape& s, const Inputs& in, k::GradWrite write,
                  std::vector<float>* lse = nullptr, std::vector<float> dqkv_start = {}) {
  using A = k::Acc<T>;
  const size_t heads = s.B * s.T * s.C, rows = s.B * s.NH * s.T;
  const auto to_t = [](const std::vector<float>& x) {
    std::vector<T> t;
    for (float e : x) t.push_back(T(e));
    return t;
  };
  if (dqkv_start.empty()) dqkv_start.assign(3 * heads, 0.0f);
  DeviceVec<T> qkv(to_t(in.qkv)), dout(to_t(in.dout)), out(heads), dqkv(to_t(dqkv_start));
  DeviceVec<T> q(heads), kk(heads), v(heads);
  DeviceVec<A> saved_lse(rows), delta(rows);
  const k::TeamShape shape = zm::testing::test_team_shape();
  const k::FlashAttentionSaved<T> saved{q.data(), kk.data(), v.data(), saved_lse.data()};
  k::flash_attention_forward<T>(shape, out.data(), saved, qkv.data(), s.B, s.T, s.C, s.NH);
  k::flash_attention_backward<T>(shape, dqkv.data(), delta.data(), dout.data(), out.data(), saved,
                                 s.B, s.T, s.C, s.NH, write);
  if (lse != nullptr) {
    const std::vector<A> saved_rows = saved_lse.get();
    *lse = std::vector<float>(saved_rows.begin(), saved_rows.end());
  }
  const auto to_float = [](const std::vector<T>& x) {
    std::vector<float> f;
    for (const T& e : x) f.push_back(static_cast<float>(e));
    return f;
  };
  return split(s, to_float(out.get()), to_float(dqkv.get()));
}

// max |x - reference| / max |reference|: the error relative to the tensor's scale (elementwise
// ratios are meaningless where the reference is near zero).
double relative_error(const std::vector<float>& x, const std::vector<float>& reference) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(x[i]) - reference[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(reference[i])));
  }
  return diff / scale;
}

void expect_close(const Results& fused, const Results& reference, double tolerance) {
  EXPECT_LE(relative_error(fused.out, reference.out), tolerance) << "out";
  EXPECT_LE(relative_error(fused.dq, reference.dq), tolerance) << "dq";
  EXPECT_LE(relative_error(fused.dk, reference.dk), tolerance) << "dk";
  EXPECT_LE(relative_error(fused.dv, reference.dv), tolerance) << "dv";
}

// One tile (T = 64), many tiles (1024), a ragged last tile (1021), at head sizes 16, 32 and 64.
const Shape kShapes[] = {{2, 64, 64, 4}, {1, 1024, 128, 2}, {1, 1021, 96, 3}, {2, 1021, 64, 4}};

TEST(FlashAttention, EqualsTheReferenceToOneInAHundredThousand) {
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(::testing::Message()
                 << "B " << s.B << " T " << s.T << " C " << s.C << " NH " << s.NH);
    const Inputs in(s);
    expect_close(run_fused<float>(s, in, k::GradWrite::Overwrite), run_reference(s, in), 1e-5);
  }
}

// The log-sum-exp saved for backward is that of each causal row of scaled scores, in double.
TEST(FlashAttention, SavesEachRowsLogSumExp) {
  const Shape s{1, 77, 32, 2};
  const Inputs in(s);
  std::vector<float> lse;
  run_fused<float>(s, in, k::GradWrite::Overwrite, &lse);
  const int64_t hd = s.C / s.NH;
  double worst = 0;
  for (int64_t h = 0; h < s.NH; ++h)
    for (int64_t t = 0; t < s.T; ++t) {
      double sum = 0;
      for (int64_t j = 0; j <= t; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < hd; ++d)
          dot += double(in.qkv[t * 3 * s.C + h * hd + d]) * in.qkv[j * 3 * s.C + s.C + h * hd + d];
        sum += std::exp(dot / std::sqrt(double(hd)));
      }
      worst = std::max(worst, std::fabs(std::log(sum) - lse[h * s.T + t]));
    }
  EXPECT_LT(worst, 1e-5);
}

TEST(FlashAttention, IsBitwiseTheSameRunAfterRun) {
  const Shape s = kShapes[2];
  const Inputs in(s);
  std::vector<float> lse1, lse2;
  const Results first = run_fused<float>(s, in, k::GradWrite::Overwrite, &lse1);
  const Results second = run_fused<float>(s, in, k::GradWrite::Overwrite, &lse2);
  EXPECT_EQ(first.out, second.out);
  EXPECT_EQ(first.dq, second.dq);
  EXPECT_EQ(first.dk, second.dk);
  EXPECT_EQ(first.dv, second.dv);
  EXPECT_EQ(lse1, lse2);
}

// Overwrite writes what accumulating into zeros gives; accumulating adds to what dqkv holds.
TEST(FlashAttention, OverwriteAndAccumulate) {
  const Shape s = kShapes[0];
  const Inputs in(s);
  const size_t n = s.B * s.T * 3 * s.C;
  const std::vector<float> garbage = random_vector<float>(n, 23);
  const Results zeroed = run_fused<float>(s, in, k::GradWrite::Accumulate);
  const Results over = run_fused<float>(s, in, k::GradWrite::Overwrite, nullptr, garbage);
  EXPECT_EQ(zeroed.dq, over.dq);
  EXPECT_EQ(zeroed.dk, over.dk);
  EXPECT_EQ(zeroed.dv, over.dv);
  const Results added = run_fused<float>(s, in, k::GradWrite::Accumulate, nullptr, garbage);
  const Results start = split(s, {}, garbage);
  for (size_t i = 0; i < zeroed.dq.size(); ++i) {
    ASSERT_EQ(added.dq[i], start.dq[i] + zeroed.dq[i]) << i;
    ASSERT_EQ(added.dk[i], start.dk[i] + zeroed.dk[i]) << i;
    ASSERT_EQ(added.dv[i], start.dv[i] + zeroed.dv[i]) << i;
  }
}

// Scratch elements of the GPU-style backward passes (flash_attention_backward.cpp), for plans
// made with a device's limits rather than this one's.
int64_t backward_pass_scratch(int64_t tile, int64_t hd, int64_t) {
  return 6 * tile * hd + 2 * tile * tile + 2 * tile;
}

// The tiles follow the level 0 scratch a device reports: on a GPU (32 rows, halved to 16 to fit)
// the backward's 32-row tiles at head size 64 take 57.6 KB, more than the 48 KiB a CUDA block
// gets by default (Kokkos 4.6 reports 40936 bytes of it), and fit once the device gives an
// sm_90 block's opt-in 227 KiB (less a reserve); on the host one size, in level 1 where level 0
// is smaller. max_tile caps the tiles.
TEST(FlashAttention, TilesFollowTheScratchTheDeviceGives) {
  const int64_t f32 = 4, hd = 64, S = 1024;
  const k::flash::TileLimits gpu_default{40936, 32, 16}, gpu_opt_in{(227 - 16) * 1024, 32, 16};
  const k::flash::TilePlan small = plan_tiles(S, hd, f32, backward_pass_scratch, gpu_default);
  EXPECT_EQ(small.tile, 16);
  EXPECT_EQ(small.level, 0);
  EXPECT_EQ(small.bytes, f32 * backward_pass_scratch(16, hd, S));
  const k::flash::TilePlan large = plan_tiles(S, hd, f32, backward_pass_scratch, gpu_opt_in);
  EXPECT_EQ(large.tile, 32);
  EXPECT_EQ(large.level, 0);
  // Where not even the smallest tile fits level 0, it takes level 1.
  const k::flash::TilePlan spilled =
      plan_tiles(S, 256, f32, backward_pass_scratch, k::flash::TileLimits{40936, 32, 16});
  EXPECT_EQ(spilled.tile, 16);
  EXPECT_EQ(spilled.level, 1);
  // The host's one size, in level 1 past its 32 KiB of level 0; never longer than the sequence.
  const k::flash::TileLimits host{32768, 64, 64};
  EXPECT_EQ(plan_tiles(S, hd, f32, backward_pass_scratch, host).tile, 64);
  EXPECT_EQ(plan_tiles(S, hd, f32, backward_pass_scratch, host).level, 1);
  EXPECT_EQ(plan_tiles(20, hd, f32, backward_pass_scratch, host).tile, 20);
  // This device's limits, capped.
  const k::flash::TileLimits here = k::flash::device_tile_limits();
  EXPECT_GT(here.level0_bytes, 0);
  EXPECT_GE(here.max_tile, here.min_tile);
  const k::flash::TileLimits capped = k::flash::device_tile_limits(8);
  EXPECT_EQ(capped.max_tile, 8);
  EXPECT_EQ(capped.min_tile, 8);
  EXPECT_EQ(plan_tiles(S, hd, f32, backward_pass_scratch, capped).tile, 8);
}

// What forward gives and saves at one tile size.
struct Forward {
  DeviceVec<float> out, q, k, v, lse;
  k::FlashAttentionSaved<float> saved() const { return {q.data(), k.data(), v.data(), lse.data()}; }
};

Forward forward_at(const Shape& s, const DeviceVec<float>& qkv, int64_t max_tile) {
  const size_t heads = s.B * s.T * s.C, rows = s.B * s.NH * s.T;
  Forward f{DeviceVec<float>(heads), DeviceVec<float>(heads), DeviceVec<float>(heads),
            DeviceVec<float>(heads), DeviceVec<float>(rows)};
  k::flash_attention_forward<float>(zm::testing::test_team_shape(), f.out.data(), f.saved(),
                                    qkv.data(), s.B, s.T, s.C, s.NH, max_tile);
  return f;
}

std::vector<float> backward_at(const Shape& s, const Forward& f, const DeviceVec<float>& dout,
                               int64_t max_tile) {
  DeviceVec<float> dqkv(3 * s.B * s.T * s.C), delta(s.B * s.NH * s.T);
  k::flash_attention_backward<float>(zm::testing::test_team_shape(), dqkv.data(), delta.data(),
                                     dout.data(), f.out.data(), f.saved(), s.B, s.T, s.C, s.NH,
                                     k::GradWrite::Overwrite, max_tile);
  return dqkv.get();
}

// Two tile sizes forced on this device: 64 rows (tiles of 64 and 36 over 100) and 16 (six of 16
// and one of 4), so that tile edges, ragged tiles and the causal diagonal fall differently.
//
// Backward, given the same saved state, is bitwise the same: every score and probability is its
// own dot product over the head size in a fixed order; every gradient element one running sum,
// kept in scratch from tile to tile, over the keys (dQ) or the queries (dK, dV) in ascending
// order; the terms a tile edge or the diagonal leaves out are exact zeros (x + 0 * y = x). Each
// term is made by the same code at both sizes: in teams of several threads one loop per element;
// in host teams of one thread (flash_host_products.hpp) vector blocks and, for the columns past
// the last whole vector of a ragged tile, a plain loop, which the compiler may contract into
// multiply-adds differently (GCC for znver3 forms none in loop-carried sums up to 256 bits wide,
// scalar ones included, and forms them in 512-bit ones): both sizes are multiples of the vector
// width (16 floats at most), so the same keys, the last of the sequence, take that loop.
//
// Forward is not: its online softmax rescales the output accumulated so far by exp(m_old - m_new)
// at each tile, against the running maximum of the tiles seen. Each path computes output row t as
// N / D with N = sum_j e_j v_j and D = sum_j e_j over the n <= S causal keys, e_j = exp(s_j - m) in
// float: each e_j and each rescale factor within 2 ulp = 4u (fast_exp; u = eps / 2) plus the
// rounding of its argument (|x| u relative, where e^-|x| |x| <= 1/e, so at most u of D per
// term), each term rescaled at most R times (R tiles), each sum of n terms within n u of the sum
// of magnitudes, the division and rescalings within 2u more. With D >= 1 (the maximal term is 1),
// |N'/D' - N/D| <= 2 gamma max_j |v_j| / (1 - gamma), gamma = (4 + 4R + 2n + 2) u, for either
// path, so the two differ by at most 4 gamma max_j |v_j| / (1 - gamma) ~ (12 + 8R + 4n) eps
// max_j |v_j| over the row's n causal keys (in its head dimension d). The log-sum-exp m + log D
// differs by at most 2 gamma / (1 - gamma) + 2u |lse| (log's own rounding, 1 ulp, in each).
TEST(FlashAttention, TileSizesChangeForwardByRoundingAndBackwardNotAtAll) {
  const Shape s{2, 100, 64, 2};
  const int64_t hd = s.C / s.NH, large = 64, small = 16;
  // The two runs must use different tiles, or the test compares a path with itself.
  const auto tile_of = [&](int64_t max_tile) {
    return k::flash::plan_tiles(s.T, hd, 4, backward_pass_scratch,
                                k::flash::device_tile_limits(max_tile))
        .tile;
  };
  ASSERT_NE(tile_of(large), tile_of(small));
  const Inputs in(s);
  const DeviceVec<float> qkv(in.qkv), dout(in.dout);
  const Forward a = forward_at(s, qkv, large), b = forward_at(s, qkv, small);

  const double eps = std::numeric_limits<float>::epsilon();
  const int64_t tiles = (s.T + small - 1) / small;
  const std::vector<float> out_a = a.out.get(), out_b = b.out.get();
  const std::vector<float> lse_a = a.lse.get(), lse_b = b.lse.get();
  for (int64_t bb = 0; bb < s.B; ++bb)
    for (int64_t h = 0; h < s.NH; ++h)
      for (int64_t d = 0; d < hd; ++d) {
        double v_max = 0;  // over the causal keys of row t, head h, dimension d
        for (int64_t t = 0; t < s.T; ++t) {
          v_max = std::max(
              v_max, std::fabs(double(in.qkv[(bb * s.T + t) * 3 * s.C + 2 * s.C + h * hd + d])));
          const double gamma = double(4 + 4 * tiles + 2 * (t + 1) + 2) * eps / 2;
          const size_t at = static_cast<size_t>((bb * s.T + t) * s.C + h * hd + d);
          ASSERT_LE(std::fabs(double(out_a[at]) - out_b[at]), 4 * gamma / (1 - gamma) * v_max)
              << "out, batch " << bb << " head " << h << " row " << t << " dimension " << d;
          if (d != 0) continue;
          const size_t row = static_cast<size_t>((bb * s.NH + h) * s.T + t);
          ASSERT_LE(std::fabs(double(lse_a[row]) - lse_b[row]),
                    2 * gamma / (1 - gamma) + eps * std::fabs(double(lse_a[row])))
              << "log-sum-exp, batch " << bb << " head " << h << " row " << t;
        }
      }

  EXPECT_EQ(backward_at(s, a, dout, large), backward_at(s, a, dout, small));
  EXPECT_EQ(backward_at(s, b, dout, large), backward_at(s, b, dout, small));
}

#if ZEROMINI_HAVE_BF16
// bf16 storage, float arithmetic: within bf16's rounding (8 bits of mantissa) of fp32.
TEST(FlashAttention, Bf16FollowsFp32) {
  const Shape s = kShapes[2];
  const Inputs in(s);
  expect_close(run_fused<zm::bf16>(s, in, k::GradWrite::Overwrite),
               run_fused<float>(s, in, k::GradWrite::Overwrite), 2e-2);
}
#endif

}  // namespace
