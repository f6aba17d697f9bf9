#include "modules/zeropp/quantize.hpp"

#include "modules/zeropp/quantize_detail.hpp"

namespace zm::kernels {

using quantize_detail::block_abs_max;
using quantize_detail::code_of;
using quantize_detail::uniform_of;

namespace {
constexpr float kInt8Max = 127.0f;
}  // namespace

template <typename T>
void quantize_int8(TeamShape shape, const T* x, int64_t n, int64_t block, void* segment,
                   Rounding rounding, uint64_t seed, uint64_t first_index) {
  const QuantizedSegment layout{n, block};
  if (n <= 0) return;
  int8_t* codes = static_cast<int8_t*>(segment);
  float* scales = reinterpret_cast<float*>(static_cast<char*>(segment) + layout.code_bytes());
  const bool stochastic = rounding == Rounding::Stochastic;
  const uint64_t key = quantize_detail::uniform_key(seed);
  Kokkos::parallel_for(
      "zeromini::quantize_int8", team_policy(shape, layout.blocks()),
      KOKKOS_LAMBDA(const TeamMember& team) {
        const int64_t begin = team.league_rank() * block;
        const int64_t count = begin + block < n ? block : n - begin;
        const float scale = block_abs_max(team, x + begin, count) / kInt8Max;
        team_single(team, [&]() { scales[team.league_rank()] = scale; });
        team_for(team, count, [&](int64_t i) {
          const int64_t e = begin + i;
          const float u = uniform_of(stochastic, key, first_index + static_cast<uint64_t>(e));
          codes[e] = static_cast<int8_t>(code_of(static_cast<float>(x[e]), scale, u, kInt8Max));
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
