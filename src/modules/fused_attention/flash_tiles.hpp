// The pieces of fused attention (flash_attention_*.cpp): rows of one head copied between device
// memory and a team's scratch, and the two tile products every step of the algorithm is made of.
//
// Each piece is written twice: for a team of one host thread, as plain loops along contiguous
// rows that the compiler vectorises (the products as sums of outer products, so that no loop
// reduces across lanes), and for a GPU team, one output element per thread or lane with its sum
// in the same order. Tiles in scratch are dense: a tile of n rows of hd has leading dimension hd,
// its transpose leading dimension n.
#pragma once

#include <cstdint>

#include "kernels/team.hpp"
#include "modules/fused_attention/flash_host_products.hpp"

namespace zm::kernels {

// Between a team loop that writes a row and one that reads what other threads wrote (a team of
// one thread has nothing to wait for).
KOKKOS_INLINE_FUNCTION void team_sync(const TeamMember& team) {
  if (!team_is_one_thread(team)) team.team_barrier();
}

}  // namespace zm::kernels

namespace zm::kernels::flash {

// The rows of one head in a buffer: row t at first + t * stride (stride hd in the (B, NH, T, hd)
// buffers, the token's row length in (B, T, C) and (B, T, 3C) ones).
template <typename T>
struct HeadRows {
  T* first;
  int64_t stride;
  KOKKOS_INLINE_FUNCTION T* row(int64_t t) const { return first + t * stride; }
};

// dst (n x hd) = rows r0 .. r0+n of src, in the arithmetic type A.
template <typename A, typename T>
KOKKOS_INLINE_FUNCTION void load_rows(const TeamMember& team, A* dst, HeadRows<const T> src,
                                      int64_t r0, int64_t n, int64_t hd) {
  if (team_is_one_thread(team)) {
    for (int64_t i = 0; i < n; ++i) {
      const T* KOKKOS_RESTRICT s = src.row(r0 + i);
      A* KOKKOS_RESTRICT d = dst + i * hd;
      for (int64_t e = 0; e < hd; ++e) d[e] = A(s[e]);
    }
    return;
  }
  team_for(team, n * hd, [&](int64_t e) { dst[e] = A(src.row(r0 + e / hd)[e % hd]); });
}

// dst (hd x n) = the transpose of rows r0 .. r0+n of src.
template <typename A, typename T>
KOKKOS_INLINE_FUNCTION void load_rows_transposed(const TeamMember& team, A* dst,
                                                 HeadRows<const T> src, int64_t r0, int64_t n,
                                                 int64_t hd) {
  if (team_is_one_thread(team)) {
    for (int64_t i = 0; i < n; ++i) {
      const T* s = src.row(r0 + i);
      for (int64_t e = 0; e < hd; ++e) dst[e * n + i] = A(s[e]);
    }
    return;
  }
  // Consecutive lanes take consecutive rows: consecutive scratch addresses.
  team_for(team, n * hd, [&](int64_t x) { dst[x] = A(src.row(r0 + x % n)[x / n]); });
}

// Rows r0 .. r0+n of dst = src (n x hd), rounded to T; added to what dst holds if `accumulate`.
template <typename T, typename A>
KOKKOS_INLINE_FUNCTION void store_rows(const TeamMember& team, HeadRows<T> dst, const A* src,
                                       int64_t r0, int64_t n, int64_t hd, bool accumulate) {
  if (team_is_one_thread(team)) {
    for (int64_t i = 0; i < n; ++i) {
      T* KOKKOS_RESTRICT d = dst.row(r0 + i);
      const A* KOKKOS_RESTRICT s = src + i * hd;
      // Two loops rather than a test per element, which would keep them from vectorising.
      if (accumulate)
        for (int64_t e = 0; e < hd; ++e) d[e] = T(A(d[e]) + s[e]);
      else
        for (int64_t e = 0; e < hd; ++e) d[e] = T(s[e]);
    }
    return;
  }
  team_for(team, n * hd, [&](int64_t e) {
    T& d = dst.row(r0 + e / hd)[e % hd];
    d = accumulate ? T(A(d) + src[e]) : T(src[e]);
  });
}

// out (rows x cols) = alpha * a (rows x depth) times bt (depth x cols): scores of query rows
// against key columns given transposed. Entries above the band (col > row + band.diagonal) are
// not needed: the host skips them where it can (they are left as they were), a GPU team
// computes them all.
template <typename A>
KOKKOS_INLINE_FUNCTION void scores(const TeamMember& team, A* out, const A* a, const A* bt,
                                   int64_t rows, int64_t cols, int64_t depth, A alpha,
                                   CausalBand band) {
#if !defined(__CUDA_ARCH__)
  if (team_is_one_thread(team)) return host_scores(out, a, bt, rows, cols, depth, alpha, band);
#endif
  team_for(team, rows * cols, [&](int64_t e) {
    const int64_t i = e / cols, j = e % cols;
    A sum = A(0);
    for (int64_t d = 0; d < depth; ++d) sum += a[i * depth + d] * bt[d * cols + j];
    out[e] = sum * alpha;
  });
}

// acc (rows x depth) = acc * row_scale[r] (when given) + p times b (inner x depth), with p's
// element (r, j) at p[r * p.row + j * p.inner]: probabilities (queries x keys) times values, or
// their transpose (rows_are Keys, p.row = 1) times output gradients. The terms the band excludes
// are zeros of p and are skipped on the host.
template <typename A>
KOKKOS_INLINE_FUNCTION void accumulate(const TeamMember& team, A* acc, Strided<const A> p,
                                       const A* b, int64_t rows, int64_t inner, int64_t depth,
                                       CausalBand band, RowsAre rows_are,
                                       const A* row_scale = nullptr) {
#if !defined(__CUDA_ARCH__)
  if (team_is_one_thread(team))
    return host_accumulate(acc, p, b, rows, inner, depth, band, rows_are, row_scale);
#endif
  team_for(team, rows * depth, [&](int64_t e) {
    const int64_t r = e / depth, d = e % depth;
    A sum = row_scale != nullptr ? acc[e] * row_scale[r] : acc[e];
    for (int64_t j = 0; j < inner; ++j) sum += p.at(r, j) * b[j * depth + d];
    acc[e] = sum;
  });
}

// Consecutive pieces of one team's scratch allocation.
template <typename A>
struct ScratchCursor {
  A* next;
  KOKKOS_INLINE_FUNCTION A* take(int64_t n) {
    A* piece = next;
    next += n;
    return piece;
  }
};

}  // namespace zm::kernels::flash
