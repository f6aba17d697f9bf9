// The tile products of fused attention for a team of one host thread (flash_tiles.hpp has the
// GPU teams' versions, and calls these only in host code). They work in register blocks: kRows
// rows by one or two vectors of columns of the output are summed in vector registers, so that
// each vector loaded from the right-hand tile feeds kRows multiply-adds and up to 2 kRows
// independent sums are in flight. Rows that do not fill a block take blocks of 4, 2 and 1 rows;
// columns cut by a tile's edge take plain loops. Every output element sums its terms in the same
// order as the team code, whatever the block shape.
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/compat.hpp"

namespace zm::kernels::flash {

// Which entries of a tile of queries (rows) against keys (columns) are causal: key <= query,
// i.e. column <= row + diagonal with diagonal = first query - first key. Tiles below the diagonal
// tile have diagonal >= their size and keep every entry.
struct CausalBand {
  int64_t diagonal;
  // How many of `n` columns row r keeps (a prefix).
  KOKKOS_INLINE_FUNCTION int64_t columns(int64_t r, int64_t n) const {
    const int64_t keep = r + diagonal + 1;
    return keep < 0 ? 0 : (keep > n ? n : keep);
  }
  // The first of `n` rows that column c belongs to (rows from there on keep it).
  KOKKOS_INLINE_FUNCTION int64_t first_row(int64_t c, int64_t n) const {
    const int64_t first = c - diagonal;
    return first < 0 ? 0 : (first > n ? n : first);
  }
};

// What the rows of an accumulated output are: queries (their terms run over keys, p as it is) or
// keys (their terms run over queries, p transposed).
enum class RowsAre { Queries, Keys };

// A matrix read through strides: element (r, j) at data[r * row + j * inner].
template <typename A>
struct Strided {
  A* data;
  int64_t row, inner;
  KOKKOS_INLINE_FUNCTION A& at(int64_t r, int64_t j) const { return data[r * row + j * inner]; }
};

// Vectors of kVectorBytes of A (up to 16 floats) in the GNU vector extension (GCC, Clang and
// the host side of nvcc): a block's sums held in such values stay in registers across the loop
// over the depth, where GCC keeps local arrays in memory and reloads them at every step.
// The width and the rows of a block follow the target's registers: a block's 2 kRows sums, its
// two loaded vectors and a broadcast must fit them, or every step spills. AVX-512 has 32 of
// 64 bytes: 8 rows (8 rows ran 20% faster than 4 at the GPT-2 head size, 64). AVX2 has 16 of 32
// bytes: 6 rows (12 sums + 3); 64-byte vectors there are emulated (fused attention ran 8x slower
// than the reference at T = 1024 on an AVX2 host), and 8 rows of 32-byte vectors spilled (1.26x).
#if defined(__AVX512F__)
constexpr int kVectorBytes = 64;
constexpr int kRows = 8;
#else
constexpr int kVectorBytes = 32;
constexpr int kRows = 6;
#endif

template <typename A>
struct Lanes {
  typedef A Vector __attribute__((vector_size(kVectorBytes)));
  static constexpr int64_t count = kVectorBytes / static_cast<int64_t>(sizeof(A));
  // By pointer, not by value: a 64-byte vector passed or returned by value has an ABI that
  // depends on AVX-512 being enabled (GCC's -Wpsabi), and these calls are inlined anyway.
  static void load(Vector* v, const A* x) { __builtin_memcpy(v, x, sizeof(Vector)); }
  static void store(A* x, const Vector* v) { __builtin_memcpy(x, v, sizeof(Vector)); }
};

// Calls block(std::integral_constant<int, R>{}, first row) for blocks of R = kRows rows that
// cover `rows`, then for blocks of 4, 2 and 1 rows over what is left (less than kRows <= 8).
template <typename Block>
inline void for_row_blocks(int64_t rows, Block&& block) {
  int64_t r0 = 0;
  for (; r0 + kRows <= rows; r0 += kRows) block(std::integral_constant<int, kRows>{}, r0);
  if (r0 + 4 <= rows) {
    block(std::integral_constant<int, 4>{}, r0);
    r0 += 4;
  }
  if (r0 + 2 <= rows) {
    block(std::integral_constant<int, 2>{}, r0);
    r0 += 2;
  }
  if (r0 < rows) block(std::integral_constant<int, 1>{}, r0);
}

// Columns j0 .. j0 + NV vectors of rows i0 .. i0 + R of host_scores.
template <int R, int NV, typename A>
inline void host_scores_block(A* out, const A* a, const A* bt, int64_t i0, int64_t j0, int64_t cols,
                              int64_t depth, A alpha) {
  using L = Lanes<A>;
  typename L::Vector sum[R][NV] = {};
  for (int64_t d = 0; d < depth; ++d) {
    typename L::Vector b[NV];
    for (int v = 0; v < NV; ++v) L::load(&b[v], bt + d * cols + j0 + v * L::count);
    for (int r = 0; r < R; ++r) {
      const A x = a[(i0 + r) * depth + d];
      for (int v = 0; v < NV; ++v) sum[r][v] += x * b[v];
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) {
      const typename L::Vector scaled = sum[r][v] * alpha;
      L::store(out + (i0 + r) * cols + j0 + v * L::count, &scaled);
    }
}

// out = alpha * a times bt (flash_tiles.hpp's scores) for the entries of `band`; blocks wholly
// above it are skipped.
template <typename A>
inline void host_scores(A* out, const A* a, const A* bt, int64_t rows, int64_t cols, int64_t depth,
                        A alpha, CausalBand band) {
  constexpr int64_t lanes = Lanes<A>::count;
  for_row_blocks(rows, [&](auto block_rows, int64_t i0) {
    constexpr int R = decltype(block_rows)::value;
    const int64_t needed = band.columns(i0 + R - 1, cols);
    int64_t j0 = 0;
    for (; j0 < needed && j0 + 2 * lanes <= cols; j0 += 2 * lanes)
      host_scores_block<R, 2>(out, a, bt, i0, j0, cols, depth, alpha);
    for (; j0 < needed && j0 + lanes <= cols; j0 += lanes)
      host_scores_block<R, 1>(out, a, bt, i0, j0, cols, depth, alpha);
    for (int64_t i = i0; j0 < needed && i < i0 + R; ++i)
      for (int64_t j = j0; j < cols; ++j) {
        A sum = A(0);
        for (int64_t d = 0; d < depth; ++d) sum += a[i * depth + d] * bt[d * cols + j];
        out[i * cols + j] = sum * alpha;
      }
  });
}

// Columns d0 .. d0 + NV vectors of rows r0 .. r0 + R of host_accumulate, terms begin .. end.
template <int R, int NV, typename A>
inline void host_accumulate_block(A* acc, int64_t depth, Strided<const A> p, int64_t r0, const A* b,
                                  int64_t d0, int64_t begin, int64_t end, const A* scale) {
  using L = Lanes<A>;
  typename L::Vector sum[R][NV];
  for (int r = 0; r < R; ++r) {
    // Multiplying by 1 where there is no scale changes no bit.
    const A factor = scale != nullptr ? scale[r0 + r] : A(1);
    for (int v = 0; v < NV; ++v) {
      L::load(&sum[r][v], acc + (r0 + r) * depth + d0 + v * L::count);
      sum[r][v] *= factor;
    }
  }
  for (int64_t j = begin; j < end; ++j) {
    typename L::Vector x[NV];
    for (int v = 0; v < NV; ++v) L::load(&x[v], b + j * depth + d0 + v * L::count);
    for (int r = 0; r < R; ++r) {
      const A weight = p.at(r0 + r, j);
      for (int v = 0; v < NV; ++v) sum[r][v] += weight * x[v];
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) L::store(acc + (r0 + r) * depth + d0 + v * L::count, &sum[r][v]);
}

// acc = acc * row_scale + p times b (flash_tiles.hpp's accumulate), the terms outside `band`
// skipped.
template <typename A>
inline void host_accumulate(A* acc, Strided<const A> p, const A* b, int64_t rows, int64_t inner,
                            int64_t depth, CausalBand band, RowsAre rows_are, const A* row_scale) {
  constexpr int64_t lanes = Lanes<A>::count;
  const bool keys = rows_are == RowsAre::Keys;
  // The terms row r needs: a prefix of keys for a query, a suffix of queries for a key. A block
  // of rows runs from the first row's first term to the last row's last.
  const auto begin = [&](int64_t r) { return keys ? band.first_row(r, inner) : int64_t(0); };
  const auto end = [&](int64_t r) { return keys ? inner : band.columns(r, inner); };
  for_row_blocks(rows, [&](auto block_rows, int64_t r0) {
    constexpr int R = decltype(block_rows)::value;
    const int64_t first = begin(r0), last = end(r0 + R - 1);
    int64_t d0 = 0;
    for (; d0 + 2 * lanes <= depth; d0 += 2 * lanes)
      host_accumulate_block<R, 2>(acc, depth, p, r0, b, d0, first, last, row_scale);
    for (; d0 + lanes <= depth; d0 += lanes)
      host_accumulate_block<R, 1>(acc, depth, p, r0, b, d0, first, last, row_scale);
    for (int64_t r = r0; r < r0 + R; ++r)
      for (int64_t d = d0; d < depth; ++d) {
        A sum = row_scale != nullptr ? acc[r * depth + d] * row_scale[r] : acc[r * depth + d];
        for (int64_t j = begin(r); j < end(r); ++j) sum += p.at(r, j) * b[j * depth + d];
        acc[r * depth + d] = sum;
      }
  });
}

}  // namespace zm::kernels::flash
