// Determinism, the AdamW formula, and the counter-based initialisation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "common/kernel_test_util.hpp"
#include "common/test_team_shape.hpp"
#include "kernels/adamw.hpp"
#include "kernels/attention.hpp"
#include "kernels/common.hpp"
#include "kernels/crossentropy.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/encoder.hpp"
#include "kernels/fast_math.hpp"
#include "kernels/init.hpp"
#include "kernels/layernorm.hpp"
#include "kernels/matmul.hpp"

namespace {

using zm::testing::DeviceVec;
using zm::testing::random_vector;
namespace k = zm::kernels;

struct Sizes {
  int64_t B, T, C, NH, V, Vp;
};
// Small, and large enough for several row blocks of the column sums (N = 192 rows) and rows
// longer than a team's lanes.
constexpr Sizes kSmall{2, 16, 32, 4, 50, 128}, kLarge{4, 48, 96, 3, 300, 320};

// Runs every kernel's forward and backward on fixed float inputs, in teams of `shape`, and returns
// every output buffer.
std::vector<std::vector<float>> run_buffers(k::TeamShape shape, const Sizes& s = kSmall) {
  const int64_t B = s.B, T = s.T, C = s.C, NH = s.NH, V = s.V, Vp = s.Vp, N = B * T;
  const auto tokens = zm::testing::random_tokens(N, static_cast<int>(V), 1);
  DeviceVec<int> tok(tokens);
  DeviceVec<float> wte(random_vector<float>(Vp * C, 2)), wpe(random_vector<float>(T * C, 3));
  DeviceVec<float> x(N * C), ln(N * C), mean(N), rstd(N), qkv(N * 3 * C), att_out(N * C);
  DeviceVec<float> w(random_vector<float>(3 * C * C, 4)), bias(random_vector<float>(3 * C, 5));
  DeviceVec<float> g(random_vector<float>(C, 6)), b(random_vector<float>(C, 7));
  const size_t heads = N * C, scores = B * NH * T * T;
  DeviceVec<float> q(heads), kk(heads), v(heads), att(scores), y(heads), datt(scores), dq(heads),
      dk(heads), dv(heads);
  DeviceVec<float> logits(N * Vp), losses(N), gl(N * C), dqkv(N * 3 * C), dx(N * C), dw(3 * C * C),
      db(3 * C), dg(C), dbeta(C), dwte(Vp * C), dwpe(T * C), gelu(N * C), dgelu(N * C);
  k::encoder_forward(shape, x.data(), tok.data(), wte.data(), wpe.data(), B, T, C);
  k::layernorm_forward(shape, ln.data(), mean.data(), rstd.data(), x.data(), g.data(), b.data(), N,
                       C);
  k::matmul_forward(shape, qkv.data(), ln.data(), w.data(), bias.data(), N, C, 3 * C);
  k::attention_forward<float>(shape, att_out.data(), {q.data(), kk.data(), v.data(), att.data()},
                              {y.data(), nullptr, nullptr, nullptr, nullptr}, qkv.data(), B, T, C,
                              NH);
  k::gelu_forward(shape, gelu.data(), att_out.data(), N * C);
  k::matmul_forward<float>(shape, logits.data(), gelu.data(), wte.data(), nullptr, N, C, Vp);
  k::softmax_crossentropy_forward(shape, logits.data(), losses.data(), tok.data(), N, V, Vp);
  k::softmax_crossentropy_backward(shape, logits.data(), tok.data(), 1.0f / N, N, V, Vp);
  k::matmul_backward<float>(shape, gl.data(), dwte.data(), nullptr, logits.data(), gelu.data(),
                            wte.data(), N, C, Vp, nullptr);
  k::gelu_backward(shape, dgelu.data(), att_out.data(), gl.data(), N * C);
  k::attention_backward<float>(
      shape, dqkv.data(), {y.data(), datt.data(), dq.data(), dk.data(), dv.data()}, dgelu.data(),
      {q.data(), kk.data(), v.data(), att.data()}, B, T, C, NH);
  auto partials = zm::testing::column_partials<float>(N, 3 * C);
  k::matmul_backward(shape, dx.data(), dw.data(), db.data(), dqkv.data(), ln.data(), w.data(), N, C,
                     3 * C, partials.data());
  k::layernorm_backward(shape, gl.data(), dg.data(), dbeta.data(), dx.data(), x.data(), g.data(),
                        mean.data(), rstd.data(), N, C, partials.data());
  const zm::testing::DeviceTokenGroups groups(tokens, Vp);
  k::encoder_backward(shape, dwte.data(), dwpe.data(), gl.data(), groups.groups, B, T, C);
  std::vector<std::vector<float>> all;
  for (const DeviceVec<float>* buffer :
       {&x, &ln, &qkv, &att_out, &logits, &losses, &dqkv, &dw, &db, &dg, &dbeta, &dwte, &dwpe})
    all.push_back(buffer->get());
  return all;
}

std::vector<float> run_everything(k::TeamShape shape, const Sizes& s = kSmall) {
  std::vector<float> all;
  for (const auto& buffer : run_buffers(shape, s))
    all.insert(all.end(), buffer.begin(), buffer.end());
  return all;
}

TEST(Kernels, BitwiseDeterministicRunAfterRun) {
  const k::TeamShape shape = zm::testing::test_team_shape();
  for (const Sizes& sizes : {kSmall, kLarge}) {
    const auto first = run_everything(shape, sizes);
    const auto second = run_everything(shape, sizes);
    ASSERT_EQ(first.size(), second.size());
    EXPECT_EQ(0, std::memcmp(first.data(), second.data(), first.size() * sizeof(float)));
    for (size_t i = 0; i < first.size(); ++i) ASSERT_TRUE(std::isfinite(first[i])) << i;
  }
}

// Teams of several threads (the GPU code paths, here on OpenMP threads) compute what teams of one
// compute, up to the order of their sums, and again bitwise the same run after run. This catches
// what a team path gets wrong (a row missed, a race: differences of the order of the values); the
// exactness of every kernel's team path is test_kernel_gradients_teams' job, in double. Each
// kernel alone agrees to ~1e-7; through this chain of 13 kernels rounding grows to ~4e-5 of a
// buffer's largest magnitude, hence a bound of 1e-3 of it.
TEST(Kernels, TeamsOfSeveralThreadsAgreeWithTeamsOfOne) {
  const int threads = zm::ExecSpace().concurrency();
  if (threads < 2)
    GTEST_SKIP() << "one thread: no team of several (the OpenMP configuration runs it)";
  for (const Sizes& sizes : {kSmall, kLarge}) {
    const auto one = run_buffers({1, 1}, sizes);
    const auto teams = run_buffers({2, 4}, sizes);
    const auto again = run_buffers({2, 4}, sizes);
    ASSERT_EQ(one.size(), teams.size());
    EXPECT_EQ(teams, again) << "teams of several threads, run after run";
    for (size_t b = 0; b < one.size(); ++b) {
      ASSERT_EQ(one[b].size(), teams[b].size());
      double scale = 0, worst = 0;
      for (float f : one[b]) scale = std::max(scale, std::fabs(double(f)));
      for (size_t i = 0; i < one[b].size(); ++i)
        worst = std::max(worst, std::fabs(double(teams[b][i]) - one[b][i]));
      EXPECT_LE(worst, 1e-3 * scale) << "output buffer " << b << " (N = " << sizes.B * sizes.T
                                     << "), largest magnitude " << scale;
    }
  }
}

// PyTorch 1.13's single-tensor AdamW, written out step by step in float.
void reference_adamw(std::vector<float>& p, const std::vector<float>& grad, std::vector<float>& m,
                     std::vector<float>& v, float lr, float b1, float b2, float eps, float wd,
                     float scale, int64_t step) {
  const double bc1 = 1.0 - std::pow(double(b1), double(step));
  const double bc2 = 1.0 - std::pow(double(b2), double(step));
  const float step_size = static_cast<float>(lr / bc1);
  const float bc2_sqrt = static_cast<float>(std::sqrt(bc2));
  for (size_t i = 0; i < p.size(); ++i) {
    const float g = grad[i] * scale;
    p[i] *= static_cast<float>(1.0 - double(lr) * wd);
    m[i] = m[i] * b1 + (1 - b1) * g;
    v[i] = v[i] * b2 + (1 - b2) * g * g;
    p[i] += -step_size * (m[i] / (std::sqrt(v[i]) / bc2_sqrt + eps));
  }
}

TEST(Kernels, AdamWFollowsPyTorchsFormula) {
  const k::TeamShape shape = zm::testing::test_team_shape();
  for (float wd : {0.0f, 0.1f}) {
    for (float scale : {1.0f, 0.37f}) {
      const size_t n = 1000;
      std::vector<float> p = random_vector<float>(n, 1), m(n, 0.f), v(n, 0.f);
      std::vector<float> rp = p, rm = m, rv = v;
      DeviceVec<float> dp(p), dm(m), dv(v);
      for (int64_t step = 1; step <= 4; ++step) {
        const auto grad = random_vector<float>(n, 10 + static_cast<unsigned>(step));
        DeviceVec<float> dg(grad);
        k::adamw_update(shape, dp.data(), dg.data(), dm.data(), dv.data(), static_cast<int64_t>(n),
                        {1e-3f, 0.9f, 0.95f, 1e-8f, wd, scale, step});
        reference_adamw(rp, grad, rm, rv, 1e-3f, 0.9f, 0.95f, 1e-8f, wd, scale, step);
      }
      const auto got = dp.get(), got_m = dm.get(), got_v = dv.get();
      for (size_t i = 0; i < n; ++i) {
        ASSERT_NEAR(got[i], rp[i], 1e-6f * std::max(1.0f, std::fabs(rp[i]))) << i;
        ASSERT_NEAR(got_m[i], rm[i], 1e-6f * std::max(1e-3f, std::fabs(rm[i]))) << i;
        ASSERT_NEAR(got_v[i], rv[i], 1e-6f * std::max(1e-6f, std::fabs(rv[i]))) << i;
      }
    }
  }
}

TEST(Kernels, InitNormalDependsOnlyOnSeedAndIndex) {
  const k::TeamShape shape = zm::testing::test_team_shape();
  const int64_t n = 10000;
  DeviceVec<float> whole(n), first(3000), rest(n - 3000);
  k::init_normal(shape, whole.data(), n, 0.02f, 42, 1000);
  k::init_normal(shape, first.data(), 3000, 0.02f, 42, 1000);
  k::init_normal(shape, rest.data(), n - 3000, 0.02f, 42, 4000);
  auto all = first.get();
  for (float f : rest.get()) all.push_back(f);
  const auto expected = whole.get();
  EXPECT_EQ(0, std::memcmp(all.data(), expected.data(), n * sizeof(float)));
  double mean = 0, sq = 0;
  for (float f : expected) mean += f, sq += double(f) * f;
  mean /= n;
  const double stddev = std::sqrt(sq / n - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.02 * 4 / std::sqrt(double(n)));  // 4 standard errors
  EXPECT_NEAR(stddev, 0.02, 0.02 * 0.05);
  DeviceVec<float> other(n);
  k::init_normal(shape, other.data(), n, 0.02f, 43, 1000);
  EXPECT_NE(other.get(), expected) << "a different seed gives different values";
}

TEST(Kernels, SumsAreExactlyRepeatable) {
  const k::TeamShape shape = zm::testing::test_team_shape();
  DeviceVec<float> x(random_vector<float>(100003, 5));
  EXPECT_EQ(k::sum_of_squares(shape, x.data(), 100003), k::sum_of_squares(shape, x.data(), 100003));
  double reference = 0;
  for (float f : x.get()) reference += double(f) * f;
  EXPECT_NEAR(k::sum_of_squares(shape, x.data(), 100003), reference, 1e-9 * reference);
}

// The chunked head's fused kernel (softmax, loss and gradient in one pass per row) gives the bits
// of the forward then the backward kernel: losses and gradients, padding columns zeroed. Rows
// longer than a team's lanes; logits spread wide enough that exponentials underflow.
TEST(Kernels, FusedCrossEntropyIsTheForwardThenTheBackward) {
  const k::TeamShape shape = zm::testing::test_team_shape();
  const int64_t N = 24, V = 1000, Vp = 1024;
  std::vector<float> logits = random_vector<float>(N * Vp, 21);
  for (float& x : logits) x *= 40.0f;
  const auto tokens = zm::testing::random_tokens(N, static_cast<int>(V), 22);
  DeviceVec<int> tok(tokens);
  DeviceVec<float> apart(logits), fused(logits), apart_losses(N), fused_losses(N);
  k::softmax_crossentropy_forward(shape, apart.data(), apart_losses.data(), tok.data(), N, V, Vp);
  k::softmax_crossentropy_backward(shape, apart.data(), tok.data(), 1.0f / N, N, V, Vp);
  k::softmax_crossentropy_fused(shape, fused.data(), fused_losses.data(), tok.data(), 1.0f / N, N,
                                V, Vp);
  EXPECT_EQ(fused.get(), apart.get());
  EXPECT_EQ(fused_losses.get(), apart_losses.get());
}

// The row sum and maximum on the host (common.hpp) take the order they state, whatever vector
// form the compiler is given: lane j sums elements j, j + 8, ...; the lanes join in a fixed tree;
// the tail after the last 8 goes last. Terms spread over many binades so that another order
// would round differently (checked: the plain running sum differs).
template <typename T>
T sum_in_lane_order(const std::vector<float>& x) {
  const int64_t n = static_cast<int64_t>(x.size());
  T lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0}, rest = 0;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) lanes[j] += T(x[i + j]);
  for (; i < n; ++i) rest += T(x[i]);
  return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
         ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7])) + rest;
}

TEST(Kernels, LaneSumAndMaxTakeTheirStatedOrder) {
  for (int64_t n : {1, 7, 8, 9, 64, 1001, 50257}) {
    std::vector<float> x = random_vector<float>(n, 31);
    for (int64_t i = 0; i < n; ++i) x[i] = std::ldexp(x[i], static_cast<int>(i % 23) - 11);
    const float expected = sum_in_lane_order<float>(x);
    EXPECT_EQ(k::lane_sum<float>(n, [&](int64_t e) { return x[e]; }), expected) << n;
    EXPECT_EQ(k::lane_sum<double>(n, [&](int64_t e) { return double(x[e]); }),
              sum_in_lane_order<double>(x))
        << n;
    EXPECT_EQ(k::lane_max(x.data(), n), *std::max_element(x.begin(), x.end())) << n;
    if (n == 50257) {
      float running = 0;
      for (float f : x) running += f;
      EXPECT_NE(running, expected) << "the terms do not tell orders apart";
    }
  }
}

// residual_of (qgZ's error feedback): e = x - e, element by element, exactly as the host does it.
TEST(Kernels, ResidualOfIsWhatTheLossyCopyMissed) {
  const k::TeamShape shape = zm::testing::test_team_shape();
  const std::vector<float> x = random_vector<float>(4099, 11),
                           copy = random_vector<float>(4099, 12);
  DeviceVec<float> xd(x), e(copy);
  k::residual_of(shape, e.data(), xd.data(), 4099);
  const auto got = e.get();
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(got[i], x[i] - copy[i]) << i;
}

}  // namespace

namespace {

// The vectorisable exp and tanh used for float against the C library, over the ranges they are
// used in (softmax arguments are <= 0; GELU's tanh argument is any real).
TEST(FastMath, ExpAndTanhAreAccurate) {
  double worst_exp = 0, worst_tanh = 0;
  for (double x = -87.0; x <= 88.0; x += 0.001) {
    const float xf = static_cast<float>(x);
    const double reference = std::exp(static_cast<double>(xf));
    worst_exp = std::max(worst_exp, std::fabs(zm::kernels::fast_exp(xf) - reference) / reference);
  }
  for (double x = -20.0; x <= 20.0; x += 0.0005) {
    const float xf = static_cast<float>(x);
    worst_tanh = std::max(
        worst_tanh, std::fabs(zm::kernels::fast_tanh(xf) - std::tanh(static_cast<double>(xf))));
  }
  EXPECT_LT(worst_exp, 3e-7);                                 // about 2 ulp of float
  EXPECT_LT(worst_tanh, 2e-7);                                // absolute
  EXPECT_EQ(zm::kernels::fast_exp(-1000.0f) < 1e-37f, true);  // clamped, never NaN
  EXPECT_EQ(zm::kernels::fast_tanh(100.0f), 1.0f);
}

}  // namespace
