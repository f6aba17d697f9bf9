// The sum of quantized segments (kernels/quantize.hpp): a team per block, each element's terms
// added in segment order.
#include "core/error.hpp"
#include "modules/zeropp/quantize.hpp"
#include "kernels/team.hpp"

namespace zm::kernels {

namespace {

// Code e of a segment's codes: an int8, or a nibble in two's complement.
KOKKOS_INLINE_FUNCTION int code_at(const char* codes, int64_t e, bool int4) {
  if (!int4) return reinterpret_cast<const int8_t*>(codes)[e];
  const uint8_t byte = reinterpret_cast<const uint8_t*>(codes)[e / 2];
  const int nibble = e % 2 ? byte >> 4 : byte & 0xF;
  return (nibble ^ 8) - 8;
}

}  // namespace

template <typename T>
void dequantize_sum(TeamShape shape, const void* packed, int64_t segments, int64_t n, int64_t block,
                    int bits, T* out, bool accumulate, int64_t stride) {
  ZM_ASSERT(bits == 8 || (bits == 4 && block % 2 == 0),
            "quantized sum of {}-bit codes in blocks of {}: expected int8, or int4 in even blocks",
            bits, block);
  ZM_ASSERT(stride >= 1, "quantized sum of every {}-th segment", stride);
  const QuantizedSegment layout{n, block, bits};
  if (n <= 0) return;
  const int64_t code_bytes = layout.code_bytes(), segment_step = layout.bytes() * stride;
  const bool int4 = bits == 4;
  const char* base = static_cast<const char*>(packed);
  Kokkos::parallel_for(
      "zeromini::dequantize_sum", team_policy(shape, layout.blocks()),
      KOKKOS_LAMBDA(const TeamMember& team) {
        const int64_t b = team.league_rank(), begin = b * block;
        const int64_t count = begin + block < n ? block : n - begin;
        team_for(team, count, [&](int64_t i) {
          const int64_t e = begin + i;
          float sum = accumulate ? static_cast<float>(out[e]) : 0.0f;
          for (int64_t s = 0; s < segments; ++s) {
            const char* segment = base + s * segment_step;
            const float scale = reinterpret_cast<const float*>(segment + code_bytes)[b];
            sum += static_cast<float>(code_at(segment, e, int4)) * scale;
          }
          out[e] = T(sum);
        });
      });
}

#define ZM_INSTANTIATE_QUANTIZE_SUM(T)                                                        \
  template void dequantize_sum<T>(TeamShape, const void*, int64_t, int64_t, int64_t, int, T*, \
                                  bool, int64_t);
ZM_FOR_EACH_KERNEL_REAL(ZM_INSTANTIATE_QUANTIZE_SUM)
#undef ZM_INSTANTIATE_QUANTIZE_SUM

}  // namespace zm::kernels
