// Sums down the columns of row-major data (bias and LayerNorm gradients) in two levels: a team
// per (block of kRowBlock rows) x (tile of kColumnTile columns), a lane per column (coalesced on
// a GPU), writes the block's sums to `partials`; then every column adds the blocks' partials in
// block order. No atomics: rows and blocks in ascending order, whatever the team shape or the
// thread count.
#pragma once

#include "kernels/team.hpp"

namespace zm::kernels {

constexpr int64_t kRowBlock = 64;
// Columns per team: the default GPU team's 4 x 32 lanes, one column each.
constexpr int64_t kColumnTile = 128;

inline int64_t row_blocks(int64_t rows) {
  return (rows + kRowBlock - 1) / kRowBlock;
}

// Elements of the partials for `sums` column sums of `columns` columns over `rows` rows.
inline int64_t column_partials_size(int64_t rows, int64_t columns, int sums = 1) {
  return row_blocks(rows) * sums * columns;
}

// Level 1: for every block b and sum k < K, partials[(b * K + k) * columns + c] is the sum over
// the block's rows r, in ascending order, of t[k] as set by term(r, c, t).
template <int K, typename A, typename Term>
void block_column_sums(TeamShape shape, const char* name, int64_t rows, int64_t columns,
                       A* partials, const Term& term) {
  const int64_t tiles = (columns + kColumnTile - 1) / kColumnTile;
  // Tiles inner: on the host a thread's contiguous share of the league covers whole blocks.
  Kokkos::parallel_for(
      name, team_policy(shape, row_blocks(rows) * tiles), KOKKOS_LAMBDA(const TeamMember& team) {
        const Term f = term;
        const int64_t b = team.league_rank() / tiles;
        const int64_t c0 = (team.league_rank() % tiles) * kColumnTile;
        const int64_t width = columns - c0 < kColumnTile ? columns - c0 : kColumnTile;
        const int64_t r0 = b * kRowBlock, r1 = r0 + kRowBlock < rows ? r0 + kRowBlock : rows;
        A* p = partials + b * K * columns + c0;
        if (team_is_one_thread(team)) {
          // Rows outside, the tile's columns inside: the inner loop vectorises.
          A sums[K][kColumnTile];
          for (int k = 0; k < K; ++k)
            for (int64_t c = 0; c < width; ++c) sums[k][c] = A(0);
          for (int64_t r = r0; r < r1; ++r)
            for (int64_t c = 0; c < width; ++c) {
              A t[K];
              f(r, c0 + c, t);
              for (int k = 0; k < K; ++k) sums[k][c] += t[k];
            }
          for (int k = 0; k < K; ++k)
            for (int64_t c = 0; c < width; ++c) p[k * columns + c] = sums[k][c];
          return;
        }
        Kokkos::parallel_for(Kokkos::TeamVectorRange(team, width), [&](int64_t c) {
          A sums[K];
          for (int k = 0; k < K; ++k) sums[k] = A(0);
          for (int64_t r = r0; r < r1; ++r) {
            A t[K];
            f(r, c0 + c, t);
            for (int k = 0; k < K; ++k) sums[k] += t[k];
          }
          for (int k = 0; k < K; ++k) p[k * columns + c] = sums[k];
        });
      });
}

// Level 2: finish(k, c, total) with the sum over the blocks, in block order, of level 1's
// partials of column c of sum k.
template <int K, typename A, typename Finish>
void add_column_partials(TeamShape shape, const char* name, int64_t rows, int64_t columns,
                         const A* partials, const Finish& finish) {
  const int64_t blocks = row_blocks(rows), stride = K * columns;
  for_each_element(
      shape, name, stride, KOKKOS_LAMBDA(int64_t j) {
        A total = A(0);
        for (int64_t b = 0; b < blocks; ++b) total += partials[b * stride + j];
        finish(j / columns, j % columns, total);
      });
}

}  // namespace zm::kernels
