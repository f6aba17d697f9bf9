// exp and tanh that compilers vectorise: libm's scalar expf/tanhf were most of a step's non-GEMM
// time (GELU, softmax). Float uses the Cephes exp (relative error below 2 ulp, tested) and
// tanh(u) = sign(u)(1 - e)/(1 + e), e = exp(-2|u|) (absolute error ~1e-7, enough for GELU);
// double (the finite-difference tests) calls the library. The float ones are forced inline: GCC
// called fast_exp out of line in a unity build, and the loop around the call stayed scalar (the
// fused cross-entropy ran 4 times slower).
#pragma once

#include <cstdint>

#include "core/compat.hpp"

namespace zm::kernels {

KOKKOS_FORCEINLINE_FUNCTION float fast_exp(float x) {
  const float hi = 88.3762626647949f, lo = -87.3365447505531f;
  x = x > hi ? hi : (x < lo ? lo : x);
  // n = round(x / ln 2), rounded by adding and subtracting 1.5 * 2^23 (round-to-nearest, which
  // vectorises where floor() does not); r = x - n ln 2 with ln 2 split so that n * c1 is exact.
  const float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  const float r2 = r * r;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r2 + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  __builtin_memcpy(&scale, &bits, sizeof(scale));
  return p * scale;
}

KOKKOS_INLINE_FUNCTION double fast_exp(double x) {
  return math::exp(x);
}

KOKKOS_FORCEINLINE_FUNCTION float fast_tanh(float u) {
  const float a = u < 0.0f ? -u : u;
  const float e = fast_exp(-2.0f * a);
  const float t = (1.0f - e) / (1.0f + e);
  return u < 0.0f ? -t : t;
}

KOKKOS_INLINE_FUNCTION double fast_tanh(double u) {
  return math::tanh(u);
}

}  // namespace zm::kernels
