// What the int8 and int4 quantization kernels (quantize.hpp) share: a block's largest magnitude,
// the rounding of one value to its code, and the stochastic uniforms. Not part of the kernel API.
#pragma once

#include <cstdint>

#include "kernels/counter_rng.hpp"
#include "kernels/team.hpp"

namespace zm::kernels::quantize_detail {

// max |x[i]| over [0, n): a maximum is exact, so any order of the team's lanes gives its bits.
template <typename T>
KOKKOS_INLINE_FUNCTION float block_abs_max(const TeamMember& team, const T* x, int64_t n) {
  float maximum = 0.0f;
  if (team_is_one_thread(team)) {
    for (int64_t i = 0; i < n; ++i) {
      const float a = math::fabs(static_cast<float>(x[i]));
      maximum = a > maximum ? a : maximum;
    }
    return maximum;
  }
  Kokkos::parallel_reduce(
      Kokkos::TeamVectorRange(team, n),
      [&](int64_t i, float& acc) {
        const float a = math::fabs(static_cast<float>(x[i]));
        acc = a > acc ? a : acc;
      },
      Kokkos::Max<float>(maximum));
  return maximum;
}

// The code of x in a block of `scale` with codes in [-max_code, max_code]: v = x / scale (one
// rounding, where a product with 1 / scale would round twice), then floor(v + 1/2) (an error of
// at most 1/2) or floor(v + u) with u uniform in [0, 1) (rounds up with probability frac(v)).
KOKKOS_INLINE_FUNCTION int code_of(float x, float scale, float uniform, float max_code) {
  const float v = scale > 0.0f ? x / scale : 0.0f;
  float r = math::floor(v + uniform);
  r = r > max_code ? max_code : r;
  r = r < -max_code ? -max_code : r;
  return static_cast<int>(r);
}

// A uniform float in [0, 1) from the top 24 bits: every value is exact in float, and 1 is never
// reached (floor(v + u) then rounds v up with probability frac(v) exactly, up to 2^-24).
KOKKOS_INLINE_FUNCTION float unit_interval_open_float(uint64_t bits) {
  return static_cast<float>(bits >> 40) * (1.0f / 16777216.0f);
}

// The key of a seed's uniforms, and element `index`'s uniform under it (1/2 when rounding to
// nearest).
inline uint64_t uniform_key(uint64_t seed) {
  return splitmix64(seed ^ 0x71775a2b2b696e74ull);
}
KOKKOS_INLINE_FUNCTION float uniform_of(bool stochastic, uint64_t key, uint64_t index) {
  return stochastic ? unit_interval_open_float(splitmix64(key + index)) : 0.5f;
}

}  // namespace zm::kernels::quantize_detail
