#include "kernels/quantize.hpp"

#include "kernels/counter_rng.hpp"
#include "kernels/team.hpp"

namespace zm::kernels {

namespace {

constexpr float kInt8Max = 127.0f;

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

// The int8 code of v = x / scale, |v| <= 127 up to rounding: floor(v + 1/2) (an error of at most
// 1/2), or floor(v + u) with u uniform in [0, 1) (rounds up with probability frac(v)).
KOKKOS_INLINE_FUNCTION int8_t code_of(float v, float uniform) {
  float r = math::floor(v + uniform);
  r = r > kInt8Max ? kInt8Max : r;
  r = r < -kInt8Max ? -kInt8Max : r;
  return static_cast<int8_t>(r);
}

}  // namespace

template <typename T>
void quantize_int8(TeamShape shape, const T* x, int64_t n, int64_t block, void* segment,
                   Rounding rounding, uint64_t seed, uint64_t first_index) {
  const QuantizedSegment layout{n, block};
  if (n <= 0) return;
  int8_t* codes = static_cast<int8_t*>(segment);
  float* scales = reinterpret_cast<float*>(static_cast<char*>(segment) + layout.code_bytes());
  const bool stochastic = rounding == Rounding::Stochastic;
  const uint64_t key = splitmix64(seed ^ 0x71775a2b2b696e74ull);
  Kokkos::parallel_for(
      "zeromini::quantize_int8", team_policy(shape, layout.blocks()),
      KOKKOS_LAMBDA(const TeamMember& team) {
        const int64_t begin = team.league_rank() * block;
        const int64_t count = begin + block < n ? block : n - begin;
        const float scale = block_abs_max(team, x + begin, count) / kInt8Max;
        team_single(team, [&]() { scales[team.league_rank()] = scale; });
        team_for(team, count, [&](int64_t i) {
          const int64_t e = begin + i;
          // Division rather than a product with 1 / scale: one rounding, not two.
          const float v = scale > 0.0f ? static_cast<float>(x[e]) / scale : 0.0f;
          const uint64_t index = first_index + static_cast<uint64_t>(e);
          const float u = stochastic ? unit_interval_open_float(splitmix64(key + index)) : 0.5f;
          codes[e] = code_of(v, u);
        });
      });
}

template <typename T>
void dequantize_int8(TeamShape shape, const void* packed, int64_t segments, int64_t n,
                     int64_t block, T* out) {
  const QuantizedSegment layout{n, block};
  if (n <= 0 || segments <= 0) return;
  const int64_t blocks = layout.blocks(), code_bytes = layout.code_bytes();
  const int64_t segment_bytes = layout.bytes();
  const char* base = static_cast<const char*>(packed);
  Kokkos::parallel_for(
      "zeromini::dequantize_int8", team_policy(shape, segments * blocks),
      KOKKOS_LAMBDA(const TeamMember& team) {
        const int64_t s = team.league_rank() / blocks, b = team.league_rank() % blocks;
        const char* segment = base + s * segment_bytes;
        const int8_t* codes = reinterpret_cast<const int8_t*>(segment);
        const float scale = reinterpret_cast<const float*>(segment + code_bytes)[b];
        const int64_t begin = b * block;
        const int64_t count = begin + block < n ? block : n - begin;
        T* dst = out + s * n;
        team_for(team, count, [&](int64_t i) {
          dst[begin + i] = T(static_cast<float>(codes[begin + i]) * scale);
        });
      });
}

#define ZM_INSTANTIATE_QUANTIZE(T)                                                                 \
  template void quantize_int8<T>(TeamShape, const T*, int64_t, int64_t, void*, Rounding, uint64_t, \
                                 uint64_t);                                                        \
  template void dequantize_int8<T>(TeamShape, const void*, int64_t, int64_t, int64_t, T*);
ZM_FOR_EACH_KERNEL_REAL(ZM_INSTANTIATE_QUANTIZE)
#undef ZM_INSTANTIATE_QUANTIZE

}  // namespace zm::kernels
