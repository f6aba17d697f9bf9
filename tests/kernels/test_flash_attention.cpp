// Fused attention (flash_attention.hpp) against the reference kernels (attention.hpp): the output
// and the q, k and v gradients in fp32 to 1e-5 relative, on sequences of one tile, of many and
// of a ragged last tile, at several head sizes; bitwise the same run after run; Overwrite equal
// to accumulating into zeros; and, with a bfloat16 type, bf16 near fp32.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "common/kernel_test_util.hpp"
#include "common/test_team_shape.hpp"
#include "kernels/attention.hpp"
#include "kernels/flash_attention.hpp"

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
