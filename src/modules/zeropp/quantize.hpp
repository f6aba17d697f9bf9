// Block-wise symmetric int8 quantization, the wire format of ZeRO++'s quantized collectives
// (zero.quantize_weights): a vector of n values is cut into blocks of `block` elements (the last
// one shorter), and each block is stored as int8 codes q = round(x / scale) in [-127, 127] with one
// fp32 scale = max|x| / 127 per block, so that x ~ q * scale with an error of at most scale / 2
// (round to nearest). Stochastic rounding rounds v = x / scale up with probability frac(v), so
// that the code is unbiased, E[q * scale] = x; its uniforms come from a hash of (seed, index),
// so the codes depend on neither the team shape nor the thread count.
//
// int4 (the gradients of ZeRO++'s qgZ) is the same with codes in [-7, 7], scale = max|x| / 7,
// two codes per byte (the even element in the low nibble, two's complement), and an even block so
// that no byte spans two blocks.
//
// A segment packs one vector: its n codes, padded to a multiple of 4 bytes, then its fp32
// scales. Segments of equal n laid end to end (what an all-gather of segments receives) stay
// 4-byte aligned, and one collective of bytes moves codes and scales together.
#pragma once

#include <cstdint>

#include "kernels/team_shape.hpp"

namespace zm::kernels {

enum class Rounding { Nearest, Stochastic };

// The layout of the segment of n values in blocks of `block` (> 0) elements, `bits` (8 or 4) per
// code.
struct QuantizedSegment {
  int64_t values = 0;
  int64_t block = 1;
  int bits = 8;
  int64_t blocks() const { return (values + block - 1) / block; }
  // The codes with their padding.
  int64_t code_bytes() const { return ((bits == 8 ? values : (values + 1) / 2) + 3) / 4 * 4; }
  int64_t scale_bytes() const { return 4 * blocks(); }
  int64_t bytes() const { return code_bytes() + scale_bytes(); }
};

// Packs x[0, n) into the segment at `segment` (QuantizedSegment{n, block}.bytes() bytes, 4-byte
// aligned), one team per block. Stochastic rounding draws element i's uniform from
// (seed, first_index + i): give every vector quantized under one seed its own index range.
template <typename T>
void quantize_int8(TeamShape shape, const T* x, int64_t n, int64_t block, void* segment,
                   Rounding rounding = Rounding::Nearest, uint64_t seed = 0,
                   uint64_t first_index = 0);

// Unpacks `segments` consecutive segments of n values each into out[0, segments * n), converted
// to T (q * scale computed in fp32, then rounded once to T), one team per block.
template <typename T>
void dequantize_int8(TeamShape shape, const void* packed, int64_t segments, int64_t n,
                     int64_t block, T* out);

// The same in int4, QuantizedSegment{n, block, 4}; `block` must be even.
template <typename T>
void quantize_int4(TeamShape shape, const T* x, int64_t n, int64_t block, void* segment,
                   Rounding rounding = Rounding::Nearest, uint64_t seed = 0,
                   uint64_t first_index = 0);
template <typename T>
void dequantize_int4(TeamShape shape, const void* packed, int64_t segments, int64_t n,
                     int64_t block, T* out);

// The reduction of quantized contributions (qgZ's "dequantize and sum"): out[i] = the sum over
// the `segments` consecutive segments of n values (QuantizedSegment{n, block, bits}) of their
// dequantized value i, added in segment order in fp32 and rounded once to T; with `accumulate`,
// out[i] (converted to fp32) is the first term. One team per block, every segment's block in
// turn: the same bits at any team shape. `stride` > 1 takes every stride-th segment from
// `packed` (segment s at s * stride segments in: one destination's contributions among those of
// several, as qgZ's hop within a node receives them).
template <typename T>
void dequantize_sum(TeamShape shape, const void* packed, int64_t segments, int64_t n, int64_t block,
                    int bits, T* out, bool accumulate = false, int64_t stride = 1);

}  // namespace zm::kernels
