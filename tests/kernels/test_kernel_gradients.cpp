// Finite-difference checks of every kernel's backward, in double precision.
//
// Each check uses the scalar objective L = sum(w * forward(inputs)) with fixed random w, so that
// backward called with dout = w must return dL/d(input). Central differences with h = 1e-6 in
// double have a truncation error ~h^2 |f'''| ~ 1e-12 and a rounding error ~1e-16 |L| / h ~
// 1e-10 for the O(1) objectives here; a tolerance of 1e-6 relative to the largest gradient of
// the tensor is therefore four orders above the method's error and far below any real mistake
// (a wrong term changes gradients by O(1) relatively).
// Backward kernels accumulate: the gradient buffers are pre-filled with a constant that the
// check subtracts, which also tests the `+=` contract.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "common/kernel_test_util.hpp"
#include "common/test_team_shape.hpp"
#include "kernels/attention.hpp"
#include "kernels/crossentropy.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/encoder.hpp"
#include "kernels/layernorm.hpp"
#include "kernels/matmul.hpp"

namespace {

using zm::testing::DeviceVec;
using zm::testing::random_vector;
namespace k = zm::kernels;
using Vec = std::vector<double>;

constexpr double kStep = 1e-6;
constexpr double kTolerance = 1e-6;
constexpr double kPrefill = 0.25;  // gradients start here; the kernels must add to it

double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Compares an analytic gradient (with the prefill removed) against central differences of
// `objective` in each element of `x` (every element, or a strided sample of large tensors).
void check_gradient(const char* what, Vec& x, const Vec& analytic_with_prefill,
                    const std::function<double()>& objective) {
  SCOPED_TRACE(what);
  ASSERT_EQ(x.size(), analytic_with_prefill.size());
  double largest = 1e-12;
  for (double g : analytic_with_prefill) largest = std::max(largest, std::fabs(g - kPrefill));
  const size_t stride = x.size() > 400 ? x.size() / 400 + 1 : 1;
  double worst = 0;
  for (size_t i = 0; i < x.size(); i += stride) {
    const double saved = x[i];
    x[i] = saved + kStep;
    const double up = objective();
    x[i] = saved - kStep;
    const double down = objective();
    x[i] = saved;
    const double numeric = (up - down) / (2 * kStep);
    const double analytic = analytic_with_prefill[i] - kPrefill;
    worst = std::max(worst, std::fabs(numeric - analytic) / largest);
  }
  EXPECT_LT(worst, kTolerance) << "largest |gradient| " << largest;
}

Vec filled(size_t n) {
  return Vec(n, kPrefill);
}

TEST(Gradients, Encoder) {
  const k::TeamShape shape = zm::testing::test_team_shape();
  const int64_t B = 2, T = 5, C = 6, V = 7;
  Vec wte = random_vector<double>(V * C, 1), wpe = random_vector<double>(T * C, 2);
  const Vec w = random_vector<double>(B * T * C, 3);
  const auto tokens = zm::testing::random_tokens(B * T, V, 4);
  DeviceVec<int> tok(tokens);
  auto forward = [&] {
    DeviceVec<double> out(B * T * C), dwte(wte), dwpe(wpe);
    k::encoder_forward(shape, out.data(), tok.data(), dwte.data(), dwpe.data(), B, T, C);
    return dot(out.get(), w);
  };
  DeviceVec<double> gwte(filled(wte.size())), gwpe(filled(wpe.size())), dout(w);
  const zm::testing::DeviceTokenGroups groups(tokens, V);
  k::encoder_backward(shape, gwte.data(), gwpe.data(), dout.data(), groups.groups, B, T, C);
  check_gradient("wte", wte, gwte.get(), forward);
  check_gradient("wpe", wpe, gwpe.get(), forward);
}

TEST(Gradients, LayerNorm) {
  const k::TeamShape shape = zm::testing::test_team_shape();
  const int64_t N = 6, C = 10;
  Vec inp = random_vector<double>(N * C, 1, 2.0), weight = random_vector<double>(C, 2),
      bias = random_vector<double>(C, 3);
  for (int64_t i = 0; i < N * C; ++i) inp[i] += 0.3 * (i % C);  // non-zero means
  const Vec w = random_vector<double>(N * C, 4);
  auto forward = [&] {
    DeviceVec<double> out(N * C), mean(N), rstd(N), x(inp), g(weight), b(bias);
    k::layernorm_forward(shape, out.data(), mean.data(), rstd.data(), x.data(), g.data(), b.data(),
                         N, C);
    return dot(out.get(), w);
  };
  DeviceVec<double> out(N * C), mean(N), rstd(N), x(inp), g(weight), b(bias), dout(w);
  k::layernorm_forward(shape, out.data(), mean.data(), rstd.data(), x.data(), g.data(), b.data(), N,
                       C);
  DeviceVec<double> dinp(filled(inp.size())), dweight(filled(C)), dbias(filled(C));
  auto partials = zm::testing::column_partials<double>(N, C, 2);
  k::layernorm_backward(shape, dinp.data(), dweight.data(), dbias.data(), dout.data(), x.data(),
                        g.data(), mean.data(), rstd.data(), N, C, partials.data());
  check_gradient("inp", inp, dinp.get(), forward);
  check_gradient("weight", weight, dweight.get(), forward);
  check_gradient("bias", bias, dbias.get(), forward);
}

TEST(Gradients, Matmul) {
  const k::TeamShape shape = zm::testing::test_team_shape();
  const int64_t N = 5, C = 7, OC = 9;
  Vec inp = random_vector<double>(N * C, 1), weight = random_vector<double>(OC * C, 2),
      bias = random_vector<double>(OC, 3);
  const Vec w = random_vector<double>(N * OC, 4);
  auto forward = [&] {
    DeviceVec<double> out(N * OC), x(inp), W(weight), b(bias);
    k::matmul_forward(shape, out.data(), x.data(), W.data(), b.data(), N, C, OC);
    return dot(out.get(), w);
  };
  DeviceVec<double> x(inp), W(weight), dout(w);
  DeviceVec<double> dinp(filled(inp.size())), dweight(filled(weight.size())), dbias(filled(OC));
  auto partials = zm::testing::column_partials<double>(N, OC);
  k::matmul_backward(shape, dinp.data(), dweight.data(), dbias.data(), dout.data(), x.data(),
                     W.data(), N, C, OC, partials.data());
  check_gradient("inp", inp, dinp.get(), forward);
  check_gradient("weight", weight, dweight.get(), forward);
  check_gradient("bias", bias, dbias.get(), forward);
}

TEST(Gradients, Attention) {
  const k::TeamShape shape = zm::testing::test_team_shape();
  const int64_t B = 2, T = 5, C = 8, NH = 2;
  Vec qkv = random_vector<double>(B * T * 3 * C, 1);
  const Vec w = random_vector<double>(B * T * C, 2);
  const size_t heads = B * NH * T * (C / NH), scores = B * NH * T * T;
  auto run_forward = [&](DeviceVec<double>& q, DeviceVec<double>& kk, DeviceVec<double>& v,
                         DeviceVec<double>& att, DeviceVec<double>& y, DeviceVec<double>& out) {
    DeviceVec<double> in(qkv);
    k::attention_forward<double>(shape, out.data(), {q.data(), kk.data(), v.data(), att.data()},
                                 {y.data(), nullptr, nullptr, nullptr, nullptr}, in.data(), B, T, C,
                                 NH);
  };
  auto forward = [&] {
    DeviceVec<double> q(heads), kk(heads), v(heads), att(scores), y(heads), out(B * T * C);
    run_forward(q, kk, v, att, y, out);
    return dot(out.get(), w);
  };
  DeviceVec<double> q(heads), kk(heads), v(heads), att(scores), y(heads), out(B * T * C);
  run_forward(q, kk, v, att, y, out);
  // The causal mask: nothing above the diagonal, rows sum to 1.
  const Vec a = att.get();
  for (size_t row = 0; row < B * NH * T; ++row) {
    const size_t t = row % T;
    double total = 0;
    for (size_t j = 0; j < T; ++j) {
      if (j > t) {
        EXPECT_EQ(a[row * T + j], 0.0);
      }
      total += a[row * T + j];
    }
    EXPECT_NEAR(total, 1.0, 1e-12);
  }
  DeviceVec<double> dqkv(filled(qkv.size())), dout(w), dy(heads), datt(scores), dq(heads),
      dk(heads), dv(heads);
  k::attention_backward<double>(
      shape, dqkv.data(), {dy.data(), datt.data(), dq.data(), dk.data(), dv.data()}, dout.data(),
      {q.data(), kk.data(), v.data(), att.data()}, B, T, C, NH);
  check_gradient("qkv", qkv, dqkv.get(), forward);
}

TEST(Gradients, Gelu) {
  const k::TeamShape shape = zm::testing::test_team_shape();
  const int64_t n = 50;
  Vec inp = random_vector<double>(n, 1, 2.0);
  const Vec w = random_vector<double>(n, 2);
  auto forward = [&] {
    DeviceVec<double> out(n), x(inp);
    k::gelu_forward(shape, out.data(), x.data(), n);
    return dot(out.get(), w);
  };
  DeviceVec<double> x(inp), dout(w), dinp(filled(n));
  k::gelu_backward(shape, dinp.data(), x.data(), dout.data(), n);
  check_gradient("inp", inp, dinp.get(), forward);
}

TEST(Gradients, Residual) {
  const k::TeamShape shape = zm::testing::test_team_shape();
  const int64_t n = 20;
  Vec a = random_vector<double>(n, 1), b = random_vector<double>(n, 2);
  const Vec w = random_vector<double>(n, 3);
  auto forward = [&] {
    DeviceVec<double> out(n), x(a), y(b);
    k::residual_forward(shape, out.data(), x.data(), y.data(), n);
    return dot(out.get(), w);
  };
  DeviceVec<double> dout(w), da(filled(n)), db(filled(n));
  // The residual's backward passes dout to both inputs.
  k::add_into(shape, da.data(), dout.data(), n);
  k::add_into(shape, db.data(), dout.data(), n);
  check_gradient("a", a, da.get(), forward);
  check_gradient("b", b, db.get(), forward);
}

TEST(Gradients, SoftmaxCrossEntropyWithPaddedVocabulary) {
  const k::TeamShape shape = zm::testing::test_team_shape();
  const int64_t N = 4, V = 11, Vp = 16;
  Vec logits = random_vector<double>(N * Vp, 1, 2.0);
  const auto targets = zm::testing::random_tokens(N, static_cast<int>(V), 2);
  DeviceVec<int> tgt(targets);
  const double dloss = 1.0 / N;  // the mean
  auto forward = [&] {
    DeviceVec<double> p(logits), losses(N);
    k::softmax_crossentropy_forward(shape, p.data(), losses.data(), tgt.data(), N, V, Vp);
    double total = 0;
    for (double l : losses.get()) total += l;
    return dloss * total;
  };
  DeviceVec<double> p(logits), losses(N);
  k::softmax_crossentropy_forward(shape, p.data(), losses.data(), tgt.data(), N, V, Vp);
  const Vec probs = p.get();
  for (int64_t i = 0; i < N; ++i)
    for (int64_t v = V; v < Vp; ++v) EXPECT_EQ(probs[i * Vp + v], 0.0) << "padding has no mass";
  k::softmax_crossentropy_backward(shape, p.data(), tgt.data(), dloss, N, V, Vp);
  Vec dlogits = p.get();  // overwritten, not accumulated: add the prefill for the checker
  for (int64_t i = 0; i < N; ++i)
    for (int64_t v = V; v < Vp; ++v) EXPECT_EQ(dlogits[i * Vp + v], 0.0) << "padding gradient";
  for (double& g : dlogits) g += kPrefill;
  check_gradient("logits", logits, dlogits, forward);
}

}  // namespace
