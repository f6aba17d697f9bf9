// int4 codes of kernels/quantize.hpp: two per byte, one team per block, each thread writing whole
// bytes (an element pair), so that no two threads share a byte.
#include "core/error.hpp"
#include "modules/zeropp/quantize.hpp"
#include "modules/zeropp/quantize_detail.hpp"

namespace zm::kernels {

namespace {

using quantize_detail::block_abs_max;
using quantize_detail::code_of;
using quantize_detail::uniform_of;

constexpr float kInt4Max = 7.0f;

// The code in the nibble's two's complement, back to [-8, 7].
KOKKOS_INLINE_FUNCTION int nibble_code(uint8_t byte, bool high) {
  const int nibble = high ? byte >> 4 : byte & 0xF;
  return (nibble ^ 8) - 8;
}

void check_block(int64_t block) {
  ZM_ASSERT(block > 0 && block % 2 == 0, "int4 blocks of {} elements: expected an even number",
            block);
}

}  // namespace

template <typename T>
void quantize_int4(TeamShape shape, const T* x, int64_t n, int64_t block, void* segment,
                   Rounding rounding, uint64_t seed, uint64_t first_index) {
  check_block(block);
  const QuantizedSegment layout{n, block, 4};
  if (n <= 0) return;
  uint8_t* codes = static_cast<uint8_t*>(segment);
  float* scales = reinterpret_cast<float*>(static_cast<char*>(segment) + layout.code_bytes());
  const bool stochastic = rounding == Rounding::Stochastic;
  const uint64_t key = quantize_detail::uniform_key(seed);
  Kokkos::parallel_for(
      "zeromini::quantize_int4", team_policy(shape, layout.blocks()),
      KOKKOS_LAMBDA(const TeamMember& team) {
        const int64_t begin = team.league_rank() * block;  // even: pairs never span blocks
        const int64_t count = begin + block < n ? block : n - begin;
        const float scale = block_abs_max(team, x + begin, count) / kInt4Max;
        team_single(team, [&]() { scales[team.league_rank()] = scale; });
        team_for(team, (count + 1) / 2, [&](int64_t pair) {
          const int64_t e = begin + 2 * pair;
          const uint64_t index = first_index + static_cast<uint64_t>(e);
          const int low = code_of(static_cast<float>(x[e]), scale,
                                  uniform_of(stochastic, key, index), kInt4Max);
          const int high = 2 * pair + 1 < count
                               ? code_of(static_cast<float>(x[e + 1]), scale,
                                         uniform_of(stochastic, key, index + 1), kInt4Max)
                               : 0;
          codes[e / 2] = static_cast<uint8_t>((low & 0xF) | ((high & 0xF) << 4));
        });
      });
}

template <typename T>
void dequantize_int4(TeamShape shape, const void* packed, int64_t segments, int64_t n,
                     int64_t block, T* out) {
  check_block(block);
  const QuantizedSegment layout{n, block, 4};
  if (n <= 0 || segments <= 0) return;
  const int64_t blocks = layout.blocks(), code_bytes = layout.code_bytes();
  const int64_t segment_bytes = layout.bytes();
  const char* base = static_cast<const char*>(packed);
  Kokkos::parallel_for(
      "zeromini::dequantize_int4", team_policy(shape, segments * blocks),
      KOKKOS_LAMBDA(const TeamMember& team) {
        const int64_t s = team.league_rank() / blocks, b = team.league_rank() % blocks;
        const char* segment = base + s * segment_bytes;
        const uint8_t* codes = reinterpret_cast<const uint8_t*>(segment);
        const float scale = reinterpret_cast<const float*>(segment + code_bytes)[b];
        const int64_t begin = b * block;
        const int64_t count = begin + block < n ? block : n - begin;
        T* dst = out + s * n;
        team_for(team, count, [&](int64_t i) {
          const int64_t e = begin + i;
          dst[e] = T(static_cast<float>(nibble_code(codes[e / 2], e % 2 == 1)) * scale);
        });
      });
}

#define ZM_INSTANTIATE_QUANTIZE_INT4(T)                                                            \
  template void quantize_int4<T>(TeamShape, const T*, int64_t, int64_t, void*, Rounding, uint64_t, \
                                 uint64_t);                                                        \
  template void dequantize_int4<T>(TeamShape, const void*, int64_t, int64_t, int64_t, T*);
ZM_FOR_EACH_KERNEL_REAL(ZM_INSTANTIATE_QUANTIZE_INT4)
#undef ZM_INSTANTIATE_QUANTIZE_INT4

}  // namespace zm::kernels
