// The GEMM wrappers against a plain triple loop, on shapes that do not divide evenly among
// threads (on the host every GEMM, and every batch, is cut into one row block per thread), and
// the Overwrite mode of the backward kernels against accumulating into zeros.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "common/kernel_test_util.hpp"
#include "common/test_team_shape.hpp"
#include "kernels/attention.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/gemm.hpp"
#include "kernels/gemm_kokkos.hpp"
#include "kernels/matmul.hpp"

namespace {

using zm::testing::DeviceVec;
using zm::testing::random_vector;
namespace k = zm::kernels;

struct Case {
  bool trans_a, trans_b;
  int64_t M, N, K, batch;
};

// C_i = alpha op(A_i) op(B_i) + beta C_i in double, row-major, matrices packed one after another.
std::vector<double> reference(const Case& c, double alpha, const std::vector<double>& A,
                              const std::vector<double>& B, double beta,
                              const std::vector<double>& C) {
  std::vector<double> out = C;
  for (int64_t i = 0; i < c.batch; ++i) {
    const double* a = A.data() + i * c.M * c.K;
    const double* b = B.data() + i * c.K * c.N;
    for (int64_t m = 0; m < c.M; ++m)
      for (int64_t n = 0; n < c.N; ++n) {
        double sum = 0;
        for (int64_t kk = 0; kk < c.K; ++kk)
          sum += (c.trans_a ? a[kk * c.M + m] : a[m * c.K + kk]) *
                 (c.trans_b ? b[n * c.K + kk] : b[kk * c.N + n]);
        double& o = out[static_cast<size_t>((i * c.M + m) * c.N + n)];
        o = alpha * sum + beta * o;
      }
  }
  return out;
}

// The public wrapper: the build's backend (host BLAS row blocks, cuBLAS, or Kokkos Kernels).
struct BuildGemm {
  template <typename T>
  void operator()(const Case& c, T alpha, const T* A, const T* B, T beta, T* C) const {
    k::gemm_strided_batched<T>(c.trans_a, c.trans_b, c.M, c.N, c.K, alpha, A, c.M * c.K, B,
                               c.K * c.N, beta, C, c.M * c.N, c.batch);
  }
};

// Kokkos Kernels' own GEMM (a team per matrix of a batch), whichever backend the build uses.
struct KokkosGemm {
  template <typename T>
  void operator()(const Case& c, T alpha, const T* A, const T* B, T beta, T* C) const {
    zm::testing::gemm_kokkos<T>({c.trans_a, c.trans_b, c.M, c.N, c.K}, alpha, A, c.M * c.K, B,
                                c.K * c.N, beta, C, c.M * c.N, c.batch);
  }
};

template <typename T, typename Gemm = BuildGemm>
void check_case(const Case& c, double tolerance, Gemm gemm = {}) {
  const size_t na = c.batch * c.M * c.K, nb = c.batch * c.K * c.N, nc = c.batch * c.M * c.N;
  const auto a = random_vector<T>(na, 1), b = random_vector<T>(nb, 2), c0 = random_vector<T>(nc, 3);
  const std::vector<double> ad(a.begin(), a.end()), bd(b.begin(), b.end()),
      cd(c0.begin(), c0.end());
  for (double beta : {0.0, 1.0}) {
    DeviceVec<T> A(a), B(b), C(c0);
    gemm(c, T(0.5), A.data(), B.data(), T(beta), C.data());
    const auto expected = reference(c, 0.5, ad, bd, beta, cd);
    const auto got = C.get();
    for (size_t i = 0; i < nc; ++i)
      ASSERT_NEAR(double(got[i]), expected[i], tolerance * (1.0 + std::fabs(expected[i])))
          << "element " << i << " of " << c.batch << " x " << c.M << "x" << c.N << "x" << c.K
          << " trans " << c.trans_a << c.trans_b << " beta " << beta;
  }
}

const Case kCases[] = {
    {false, false, 37, 29, 13, 1}, {false, true, 37, 29, 13, 1}, {true, false, 37, 29, 13, 1},
    {true, true, 37, 29, 13, 1},   {false, true, 1, 5, 7, 1},    {false, false, 19, 11, 5, 7},
    {true, false, 19, 11, 5, 7},   {false, true, 3, 64, 9, 5},   {false, false, 130, 17, 33, 3},
};

TEST(Gemm, MatchesTheTripleLoopInFloatAndDouble) {
  for (const Case& c : kCases) {
    check_case<float>(c, 2e-5);
    check_case<double>(c, 1e-12);
  }
}

TEST(Gemm, KokkosKernelsTeamGemmMatchesTheTripleLoop) {
  for (const Case& c : kCases) {
    check_case<float>(c, 2e-5, KokkosGemm{});
    check_case<double>(c, 1e-12, KokkosGemm{});
  }
}

TEST(Gemm, SingleGemmEqualsABatchOfOne) {
  const Case c{false, true, 45, 23, 17, 1};
  const auto a = random_vector<float>(c.M * c.K, 4), b = random_vector<float>(c.N * c.K, 5);
  DeviceVec<float> A(a), B(b), C1(c.M * c.N), C2(c.M * c.N);
  k::gemm<float>(false, true, c.M, c.N, c.K, 1.0f, A.data(), B.data(), 0.0f, C1.data());
  k::gemm_strided_batched<float>(false, true, c.M, c.N, c.K, 1.0f, A.data(), 0, B.data(), 0, 0.0f,
                                 C2.data(), 0, 1);
  EXPECT_EQ(C1.get(), C2.get());
}

// Inner dimension K = 0: every sum has no terms, so C = beta * C as BLAS defines it, beta = 0
// writing zeros whatever C held (NaN here, which beta * C would keep). The libraries behind the
// wrappers reject the leading dimension 0 that this gives A or B (cuBLAS, a reference BLAS) or
// return with C as it was (Kokkos Kernels 3.x), so the wrappers scale C themselves. beta = 1/2
// and 1 scale exactly, hence the exact comparison.
TEST(Gemm, NoTermsScaleCAsBlasDefines) {
  const Case cases[] = {{false, false, 5, 7, 0, 1},
                        {false, true, 5, 7, 0, 1},
                        {true, false, 4, 3, 0, 3},
                        {true, true, 4, 3, 0, 3}};
  const auto run = [](const Case& c, const char* path, double beta, auto&& gemm) {
    const size_t nc = static_cast<size_t>(c.batch * c.M * c.N);
    std::vector<float> c0 = random_vector<float>(nc, 12);
    c0[1] = std::numeric_limits<float>::quiet_NaN();
    // A and B have no elements; one each, so that the pointers are a buffer's.
    DeviceVec<float> A(1), B(1), C(c0);
    gemm(c, 1.0f, A.data(), B.data(), float(beta), C.data());
    const std::vector<float> got = C.get();
    for (size_t i = 0; i < nc; ++i) {
      if (beta == 0.0) {
        ASSERT_EQ(got[i], 0.0f) << path << ", element " << i << " of " << c.batch << " x " << c.M
                                << "x" << c.N << ", trans " << c.trans_a << c.trans_b;
      } else if (std::isnan(c0[i])) {
        ASSERT_TRUE(std::isnan(got[i])) << path << ", beta " << beta;
      } else {
        ASSERT_EQ(got[i], float(beta) * c0[i]) << path << ", beta " << beta << ", element " << i;
      }
    }
  };
  for (const Case& c : cases)
    for (double beta : {0.0, 0.5, 1.0}) {
      run(c, "build's batched GEMM", beta, BuildGemm{});
      run(c, "Kokkos Kernels' GEMM", beta, KokkosGemm{});
      if (c.batch == 1)
        run(c, "single GEMM", beta,
            [](const Case& s, float alpha, const float* A, const float* B, float b, float* C) {
              k::gemm<float>(s.trans_a, s.trans_b, s.M, s.N, s.K, alpha, A, B, b, C);
            });
    }
}

#if ZEROMINI_HAVE_BF16
TEST(Gemm, Bf16IsTheFloatGemmOfTheRoundedInputs) {
  const Case c{false, true, 21, 18, 40, 3};
  const size_t na = c.batch * c.M * c.K, nb = c.batch * c.K * c.N, nc = c.batch * c.M * c.N;
  std::vector<zm::bf16> a, b;
  for (float f : random_vector<float>(na, 6)) a.push_back(zm::bf16(f));
  for (float f : random_vector<float>(nb, 7)) b.push_back(zm::bf16(f));
  std::vector<double> ad, bd;
  for (auto x : a) ad.push_back(float(x));
  for (auto x : b) bd.push_back(float(x));
  DeviceVec<zm::bf16> A(a), B(b), C(nc);
  k::gemm_strided_batched<zm::bf16>(false, true, c.M, c.N, c.K, zm::bf16(1.0f), A.data(), c.M * c.K,
                                    B.data(), c.K * c.N, zm::bf16(0.0f), C.data(), c.M * c.N,
                                    c.batch);
  const auto expected = reference(c, 1.0, ad, bd, 0.0, std::vector<double>(nc, 0.0));
  const auto got = C.get();
  // The output is rounded to bf16: 8 bits of mantissa.
  for (size_t i = 0; i < nc; ++i)
    ASSERT_NEAR(double(float(got[i])), expected[i], 1e-2 * (1.0 + std::fabs(expected[i]))) << i;
}
#endif

// Whether |a - b| <= 2 gamma_n m element by element: the textbook bound between two summation
// orders of n products whose magnitudes sum to m (gamma_n = n u / (1 - n u), u = 2^-24).
void expect_reordered_sum(const std::vector<float>& a, const std::vector<float>& b,
                          const std::vector<double>& magnitude, int64_t n,
                          const std::string& what) {
  const double u = std::ldexp(1.0, -24), gamma = n * u / (1 - n * u);
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_LE(std::fabs(double(a[i]) - b[i]), 2 * gamma * magnitude[i]) << what << " " << i;
}

// A linear layer computed in tiles of its output's columns (model.tiles: model/gpt.cpp), each
// tile's GEMM writing its columns of the wider output (leading dimension OC) and its rows of the
// weight gradient, leaves the other columns alone and gives the whole layer's results:
// - the output and the weight gradient are each element's same sum over the same K: bitwise
//   wherever the BLAS sums an element in an order that does not depend on the matrix's width.
//   OpenBLAS's SkylakeX kernels do, its Haswell kernels do not (their edge kernels sum in another
//   order): the bitwise check runs where ZEROMINI_TILES_BITWISE is set (tests/kernels/
//   CMakeLists.txt runs it under the SkylakeX kernels on AVX-512 hosts); elsewhere the two differ
//   by at most a reordering of the sum;
// - the input gradient, a sum over OC split into per-tile partial sums, is a reordering of the sum
//   anywhere.
TEST(Gemm, TilesOfALayerAreTheWholeLayer) {
  const bool bitwise = std::getenv("ZEROMINI_TILES_BITWISE") != nullptr;
#if defined(__x86_64__)
  if (bitwise && !__builtin_cpu_supports("avx512f"))
    GTEST_SKIP() << "OpenBLAS's SkylakeX kernels need AVX-512, which this CPU lacks";
#endif
  const k::TeamShape shape = zm::testing::test_team_shape();
  const int64_t N = 37, C = 24, OC = 96;
  const auto inp = random_vector<float>(N * C, 21), weight = random_vector<float>(OC * C, 22),
             bias = random_vector<float>(OC, 23), dout = random_vector<float>(N * OC, 24);
  DeviceVec<float> x(inp), w(weight), b(bias), d(dout);
  DeviceVec<float> out(N * OC), dx(N * C), dw(OC * C), db(OC);
  auto partials = zm::testing::column_partials<float>(N, OC);
  k::matmul_forward(shape, out.data(), x.data(), w.data(), b.data(), N, C, OC);
  k::matmul_backward(shape, dx.data(), dw.data(), db.data(), d.data(), x.data(), w.data(), N, C, OC,
                     partials.data(), k::GradWrite::Overwrite);
  // The magnitudes of each element's products: sum |x w| over C, |dout x| over N, |dout w| over OC.
  std::vector<double> out_m(N * OC), dw_m(OC * C), dx_m(N * C);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < OC; ++o)
      for (int64_t c = 0; c < C; ++c) {
        out_m[n * OC + o] += std::fabs(double(inp[n * C + c]) * weight[o * C + c]);
        dw_m[o * C + c] += std::fabs(double(dout[n * OC + o]) * inp[n * C + c]);
        dx_m[n * C + c] += std::fabs(double(dout[n * OC + o]) * weight[o * C + c]);
      }
  for (int64_t tiles : {2, 3, 4}) {
    const int64_t rows = OC / tiles;
    const std::string name = std::to_string(tiles) + " tiles: ";
    DeviceVec<float> out_t(std::vector<float>(N * OC, -7.0f)), dx_t(N * C), dw_t(OC * C);
    for (int64_t t = 0; t < tiles; ++t) {
      k::matmul_forward<float>(shape, out_t.data() + t * rows, x.data(), w.data() + t * rows * C,
                               nullptr, N, C, rows, zm::GemmMath::FP32, OC);
      if (t == 0) {  // the other tiles' columns are untouched so far
        const auto partial = out_t.get();
        for (int64_t n = 0; n < N; ++n)
          for (int64_t o = rows; o < OC; ++o)
            ASSERT_EQ(partial[n * OC + o], -7.0f) << n << " " << o;
      }
    }
    k::bias_forward(shape, out_t.data(), b.data(), N, OC);
    for (int64_t t = tiles - 1; t >= 0; --t)
      k::matmul_backward<float>(shape, dx_t.data(), dw_t.data() + t * rows * C, nullptr,
                                d.data() + t * rows, x.data(), w.data() + t * rows * C, N, C, rows,
                                nullptr,
                                t == tiles - 1 ? k::GradWrite::Overwrite : k::GradWrite::Accumulate,
                                zm::GemmMath::FP32, OC);
    if (bitwise) {
      EXPECT_EQ(out_t.get(), out.get()) << name << "forward";
      EXPECT_EQ(dw_t.get(), dw.get()) << name << "weight gradient";
    }
    // The bias comes after the sum alike: within the bound of the sum alone.
    expect_reordered_sum(out_t.get(), out.get(), out_m, C, name + "forward");
    expect_reordered_sum(dw_t.get(), dw.get(), dw_m, N, name + "weight gradient");
    expect_reordered_sum(dx_t.get(), dx.get(), dx_m, OC, name + "input gradient");
  }
}

// Overwrite must give exactly what accumulating into a zeroed buffer gives, whatever the buffer
// held before.
TEST(GradWrite, OverwriteEqualsAccumulatingIntoZeros) {
  const k::TeamShape shape = zm::testing::test_team_shape();
  const int64_t B = 2, T = 8, C = 16, NH = 2, OC = 24, N = B * T;
  const auto dout = random_vector<float>(N * OC, 8), inp = random_vector<float>(N * C, 9),
             weight = random_vector<float>(OC * C, 10),
             garbage = random_vector<float>(N * 3 * C, 11);
  DeviceVec<float> d(dout), x(inp), w(weight), dw(OC * C), db(OC);
  DeviceVec<float> zeroed(N * C),
      overwritten(std::vector<float>(garbage.begin(), garbage.begin() + N * C));
  auto partials = zm::testing::column_partials<float>(N, OC);
  k::matmul_backward(shape, zeroed.data(), dw.data(), db.data(), d.data(), x.data(), w.data(), N, C,
                     OC, partials.data());
  k::matmul_backward(shape, overwritten.data(), dw.data(), db.data(), d.data(), x.data(), w.data(),
                     N, C, OC, partials.data(), k::GradWrite::Overwrite);
  EXPECT_EQ(zeroed.get(), overwritten.get()) << "matmul_backward";

  DeviceVec<float> g_zeroed(N * C),
      g_over(std::vector<float>(garbage.begin(), garbage.begin() + N * C));
  k::gelu_backward(shape, g_zeroed.data(), x.data(), zeroed.data(), N * C);
  k::gelu_backward(shape, g_over.data(), x.data(), zeroed.data(), N * C, k::GradWrite::Overwrite);
  EXPECT_EQ(g_zeroed.get(), g_over.get()) << "gelu_backward";

  // Attention: forward once, then backward into a zeroed and into a garbage-filled dqkv.
  DeviceVec<float> qkv(random_vector<float>(N * 3 * C, 12)), out(N * C), q(N * C), kk(N * C),
      v(N * C), att(B * NH * T * T), y(N * C), datt(B * NH * T * T), dq(N * C), dk(N * C),
      dv(N * C);
  k::attention_forward<float>(shape, out.data(), {q.data(), kk.data(), v.data(), att.data()},
                              {y.data(), nullptr, nullptr, nullptr, nullptr}, qkv.data(), B, T, C,
                              NH);
  DeviceVec<float> a_zeroed(N * 3 * C), a_over(garbage);
  for (DeviceVec<float>* dqkv : {&a_zeroed, &a_over})
    k::attention_backward<float>(
        shape, dqkv->data(), {y.data(), datt.data(), dq.data(), dk.data(), dv.data()}, out.data(),
        {q.data(), kk.data(), v.data(), att.data()}, B, T, C, NH,
        dqkv == &a_over ? k::GradWrite::Overwrite : k::GradWrite::Accumulate);
  EXPECT_EQ(a_zeroed.get(), a_over.get()) << "attention_backward";
}

}  // namespace
