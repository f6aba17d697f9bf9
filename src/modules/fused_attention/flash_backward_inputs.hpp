// What the backward passes of fused attention share (flash_attention_backward*.cpp): their
// inputs, the layout of a team's tiles, and the recomputation of one tile pair's probabilities
// and score gradients.
#pragma once

#include "kernels/fast_math.hpp"
#include "modules/fused_attention/flash_attention.hpp"
#include "modules/fused_attention/flash_plan.hpp"
#include "modules/fused_attention/flash_tiles.hpp"

namespace zm::kernels::flash {

// What the passes read (the saved heads, the output and its gradient, the row statistics) and
// the steps they share.
template <typename T>
struct BackwardInputs {
  using A = Acc<T>;
  struct Tiles {
    A *q, *dout, *kt, *vt, *first, *second, *p, *ds, *lse, *delta;
  };
  FlashAttentionSaved<T> saved;
  const T* out;   // (B, S, C)
  const T* dout;  // (B, S, C)
  A* delta;       // (B, NH, S): dout . out per row, written by the dQ pass
  T* dqkv;        // (B, S, 3C)
  int64_t S, C, NH, head_size, tiles;
  flash::TilePlan plan;
  A scale;
  bool accumulate;

  KOKKOS_INLINE_FUNCTION HeadRows<const T> heads(const T* buffer, int64_t bh) const {
    return {buffer + bh * S * head_size, head_size};
  }
  KOKKOS_INLINE_FUNCTION HeadRows<const T> tokens(const T* buffer, int64_t bh) const {
    return {buffer + (bh / NH) * S * C + (bh % NH) * head_size, C};
  }
  // The q (third 0), k (1) or v (2) gradient rows of head bh in dqkv.
  KOKKOS_INLINE_FUNCTION HeadRows<T> gradient(int third, int64_t bh) const {
    return {dqkv + (bh / NH) * S * 3 * C + third * C + (bh % NH) * head_size, 3 * C};
  }
  KOKKOS_INLINE_FUNCTION int64_t rows_of(int64_t t) const {
    return S - t * plan.tile < plan.tile ? S - t * plan.tile : plan.tile;
  }

  KOKKOS_INLINE_FUNCTION Tiles tiles_of(const TeamMember& team) const {
    const int64_t tile = plan.tile;
    flash::ScratchCursor<A> cursor{flash::team_scratch<A>(team, plan)};
    Tiles s;
    s.q = cursor.take(tile * head_size);
    s.dout = cursor.take(tile * head_size);
    s.kt = cursor.take(tile * head_size);
    s.vt = cursor.take(tile * head_size);
    s.first = cursor.take(tile * head_size);
    s.second = cursor.take(tile * head_size);
    s.p = cursor.take(tile * tile);
    s.ds = cursor.take(tile * tile);
    s.lse = cursor.take(tile);
    s.delta = cursor.take(tile);
    return s;
  }

  // The key tile at k0, transposed: keys and values.
  KOKKOS_INLINE_FUNCTION void load_keys(const TeamMember& team, const Tiles& s, int64_t bh,
                                        int64_t k0, int64_t nk) const {
    flash::load_rows_transposed(team, s.kt, heads(saved.k, bh), k0, nk, head_size);
    flash::load_rows_transposed(team, s.vt, heads(saved.v, bh), k0, nk, head_size);
  }

  // p = the probabilities of queries q0.. against keys k0.., ds = the gradient of their scores
  // (the score scale folded in); both zero above the diagonal.
  KOKKOS_INLINE_FUNCTION void recompute(const TeamMember& team, const Tiles& s, int64_t q0,
                                        int64_t nq, int64_t k0, int64_t nk) const {
    const CausalBand band{q0 - k0};
    flash::scores(team, s.p, s.q, s.kt, nq, nk, head_size, scale, band);
    flash::scores(team, s.ds, s.dout, s.vt, nq, nk, head_size, A(1), band);
    team_sync(team);
    const A score_scale = scale;
    if (!team_is_one_thread(team)) {
      team_for(team, nq * nk, [&](int64_t e) {
        const int64_t i = e / nk, j = e % nk;
        const bool causal = j < band.columns(i, nk);
        const A prob = causal ? fast_exp(s.p[e] - s.lse[i]) : A(0);
        s.p[e] = prob;
        s.ds[e] = causal ? prob * (s.ds[e] - s.delta[i]) * score_scale : A(0);
      });
      return;
    }
    for (int64_t i = 0; i < nq; ++i) {
      const A row_lse = s.lse[i], row_delta = s.delta[i];
      const int64_t causal = band.columns(i, nk);
      A* KOKKOS_RESTRICT p = s.p + i * nk;
      A* KOKKOS_RESTRICT ds = s.ds + i * nk;
      for (int64_t j = 0; j < causal; ++j) {
        const A prob = fast_exp(p[j] - row_lse);
        p[j] = prob;
        ds[j] = prob * (ds[j] - row_delta) * score_scale;
      }
      for (int64_t j = causal; j < nk; ++j) {
        p[j] = A(0);
        ds[j] = A(0);
      }
    }
  }
};

// The backward on teams of one host thread: a team per (batch, head), every tile pair of the
// head in one pass (flash_attention_backward_host.cpp). `in` as the GPU-style passes take it; its
// plan and tile count are set here, within `limits`.
template <typename T>
void backward_by_head(TeamShape shape, BackwardInputs<T> in, int64_t B, const TileLimits& limits);

}  // namespace zm::kernels::flash
