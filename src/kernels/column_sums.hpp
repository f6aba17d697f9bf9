// Sums down the columns of row-major data (the bias and LayerNorm parameter gradients) in two
// levels: a team per block of kRowBlock rows writes the block's column sums to `partials`, then
// every column adds the blocks' partials in block order. A fixed order and no atomics, and on a GPU
// rows x columns / kRowBlock lanes at work instead of one thread per column.
#pragma once

#include "kernels/team.hpp"

namespace zm::kernels {

constexpr int64_t kRowBlock = 64;

inline int64_t row_blocks(int64_t rows) {
  return (rows + kRowBlock - 1) / kRowBlock;
}

// Elements (of the arithmetic type) of the partials for `sums` column sums of `columns` columns
// over `rows` rows: what callers of the kernels that take `partials` allocate.
inline int64_t column_partials_size(int64_t rows, int64_t columns, int sums = 1) {
  return row_blocks(rows) * sums * columns;
}

// Level 1: for every block b and sum k < K, partials[(b * K + k) * columns + c] is the sum over
// the block's rows r, in ascending order, of t[k] as set by term(r, c, t).
template <int K, typename A, typename Term>
void block_column_sums(const char* name, int64_t rows, int64_t columns, A* partials,
                       const Term& term) {
  Kokkos::parallel_for(
      name, team_policy(row_blocks(rows)), KOKKOS_LAMBDA(const TeamMember& team) {
        const Term f = term;
        const int64_t b = team.league_rank();
        const int64_t r0 = b * kRowBlock, r1 = r0 + kRowBlock < rows ? r0 + kRowBlock : rows;
        A* p = partials + b * K * columns;
        if (team_is_one_thread(team)) {
          // Rows outside, columns inside: the inner loop vectorises, and every column still adds
          // its rows in ascending order, as the lanes below do.
          for (int64_t j = 0; j < K * columns; ++j) p[j] = A(0);
          for (int64_t r = r0; r < r1; ++r)
            for (int64_t c = 0; c < columns; ++c) {
              A t[K];
              f(r, c, t);
              for (int k = 0; k < K; ++k) p[k * columns + c] += t[k];
            }
          return;
        }
        Kokkos::parallel_for(Kokkos::TeamVectorRange(team, columns), [&](int64_t c) {
          A sums[K];
          for (int k = 0; k < K; ++k) sums[k] = A(0);
          for (int64_t r = r0; r < r1; ++r) {
            A t[K];
            f(r, c, t);
            for (int k = 0; k < K; ++k) sums[k] += t[k];
          }
          for (int k = 0; k < K; ++k) p[k * columns + c] = sums[k];
        });
      });
}

// Level 2: finish(k, c, total), total the sum over the blocks, in block order, of what level 1
// left for column c of sum k.
template <int K, typename A, typename Finish>
void add_column_partials(const char* name, int64_t rows, int64_t columns, const A* partials,
                         const Finish& finish) {
  const int64_t blocks = row_blocks(rows), stride = K * columns;
  for_each_element(
      name, stride, KOKKOS_LAMBDA(int64_t j) {
        A total = A(0);
        for (int64_t b = 0; b < blocks; ++b) total += partials[b * stride + j];
        finish(j / columns, j % columns, total);
      });
}

}  // namespace zm::kernels
