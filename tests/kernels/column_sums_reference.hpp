// The previous level 1 of the column sums (kernels/column_sums.hpp), kept as a reference for the
// tests (the same bits) and the kernel benchmark (old and new side by side, miniapp/bench): a
// team per block of kRowBlock rows, its threads and lanes over all the columns. On a GPU that is
// only N / kRowBlock teams, each lane looping over columns / 128 columns: latency-bound. Not used
// by the model.
#pragma once

#include "kernels/column_sums.hpp"

namespace zm::kernels::reference {

// What block_column_sums<K> computes, bit for bit.
template <int K, typename A, typename Term>
void row_block_column_sums(TeamShape shape, const char* name, int64_t rows, int64_t columns,
                           A* partials, const Term& term) {
  Kokkos::parallel_for(
      name, team_policy(shape, row_blocks(rows)), KOKKOS_LAMBDA(const TeamMember& team) {
        const Term f = term;
        const int64_t b = team.league_rank();
        const int64_t r0 = b * kRowBlock, r1 = r0 + kRowBlock < rows ? r0 + kRowBlock : rows;
        A* p = partials + b * K * columns;
        if (team_is_one_thread(team)) {
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

}  // namespace zm::kernels::reference
