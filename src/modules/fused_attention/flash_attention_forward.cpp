// Fused attention forward: a team per (batch, head, query tile), an online softmax over the key
// tiles up to the diagonal (flash_attention.hpp).
#include "kernels/fast_math.hpp"
#include "modules/fused_attention/flash_attention.hpp"
#include "modules/fused_attention/flash_plan.hpp"
#include "modules/fused_attention/flash_tiles.hpp"

namespace zm::kernels {

// In this file S is the sequence length (T in the headers) and T the element type.
namespace {

using flash::HeadRows;

// Scratch per team: the query tile, the key tile transposed, the value tile, the output
// accumulator (tile x hd each), the scores (tile x tile), and per row the running maximum, the
// running sum and the factor the accumulator is rescaled by.
int64_t forward_scratch(int64_t tile, int64_t hd, int64_t) {
  return 4 * tile * hd + tile * tile + 3 * tile;
}

template <typename T>
struct ForwardTeams {
  using A = Acc<T>;
  const T* qkv;
  T* out;
  FlashAttentionSaved<T> saved;
  int64_t S, C, NH, hd, tiles;
  flash::TilePlan plan;
  A scale;

  struct Tiles {
    A *q, *kt, *v, *o, *p, *maximum, *total, *rescale;
  };

  KOKKOS_INLINE_FUNCTION void operator()(const TeamMember& team) const {
    const int64_t qt = team.league_rank() % tiles, bh = team.league_rank() / tiles;
    const int64_t b = bh / NH, h = bh % NH, tile = plan.tile;
    const int64_t q0 = qt * tile, nq = S - q0 < tile ? S - q0 : tile;
    flash::ScratchCursor<A> cursor{flash::team_scratch<A>(team, plan)};
    Tiles s;
    s.q = cursor.take(tile * hd);
    s.kt = cursor.take(tile * hd);
    s.v = cursor.take(tile * hd);
    s.o = cursor.take(tile * hd);
    s.p = cursor.take(tile * tile);
    s.maximum = cursor.take(tile);
    s.total = cursor.take(tile);
    s.rescale = cursor.take(tile);
    // Row t of head h: q at the token's column h*hd, k and v C and 2C further.
    const HeadRows<const T> q{qkv + b * S * 3 * C + h * hd, 3 * C};
    const HeadRows<const T> k{q.first + C, 3 * C}, v{q.first + 2 * C, 3 * C};
    save_heads(team, q, k, v, bh * S, q0, nq);
    flash::load_rows(team, s.q, q, q0, nq, hd);
    team_for(team, nq * hd, [&](int64_t e) { s.o[e] = A(0); });
    team_for(team, nq, [&](int64_t i) {
      s.maximum[i] = A(-1e30);
      s.total[i] = A(0);
    });
    for (int64_t kt = 0; kt <= qt; ++kt) {
      const int64_t k0 = kt * tile, nk = S - k0 < tile ? S - k0 : tile;
      team_sync(team);  // the previous tile's products are done with kt, v and p
      flash::load_rows_transposed(team, s.kt, k, k0, nk, hd);
      flash::load_rows(team, s.v, v, k0, nk, hd);
      team_sync(team);
      const flash::CausalBand band{q0 - k0};
      flash::scores(team, s.p, s.q, s.kt, nq, nk, hd, scale, band);
      team_sync(team);
      team_for(team, nq, [&](int64_t i) { online_softmax_row(s, i, nk, band.columns(i, nk)); });
      team_sync(team);
      flash::accumulate(team, s.o, flash::Strided<const A>{s.p, nk, 1}, s.v, nq, nk, hd, band,
                        flash::RowsAre::Queries, s.rescale);
    }
    team_sync(team);
    finish(team, s, bh * S, b, h, q0, nq);
  }

  // The rows q0 .. q0+nq of this head's q, k and v, permuted into the saved (B, NH, S, hd)
  // buffers: every row belongs to one query tile, so each is written once.
  KOKKOS_INLINE_FUNCTION void save_heads(const TeamMember& team, HeadRows<const T> q,
                                         HeadRows<const T> k, HeadRows<const T> v, int64_t head0,
                                         int64_t q0, int64_t nq) const {
    T* sq = saved.q + (head0 + q0) * hd;
    T* sk = saved.k + (head0 + q0) * hd;
    T* sv = saved.v + (head0 + q0) * hd;
    flash::load_rows(team, sq, q, q0, nq, hd);
    flash::load_rows(team, sk, k, q0, nq, hd);
    flash::load_rows(team, sv, v, q0, nq, hd);
  }

  // Row i's scores against the tile's first n keys (the causal ones; the rest are zeroed) become
  // exp(score - new maximum); the running sum and maximum follow, and rescale[i] is what the
  // accumulated output is multiplied by.
  KOKKOS_INLINE_FUNCTION void online_softmax_row(const Tiles& s, int64_t i, int64_t nk,
                                                 int64_t n) const {
    A* KOKKOS_RESTRICT p = s.p + i * nk;
    const A tile_max = lane_max(p, n);
    const A maximum = tile_max > s.maximum[i] ? tile_max : s.maximum[i];
    for (int64_t j = 0; j < n; ++j) p[j] = fast_exp(p[j] - maximum);
    for (int64_t j = n; j < nk; ++j) p[j] = A(0);
    const A rescale = fast_exp(s.maximum[i] - maximum);
    s.total[i] = s.total[i] * rescale + lane_sum<A>(n, [&](int64_t j) { return p[j]; });
    s.maximum[i] = maximum;
    s.rescale[i] = rescale;
  }

  // out = accumulated output / running sum, and each row's log-sum-exp.
  KOKKOS_INLINE_FUNCTION void finish(const TeamMember& team, const Tiles& s, int64_t head0,
                                     int64_t b, int64_t h, int64_t q0, int64_t nq) const {
    team_for(team, nq, [&](int64_t i) {
      const A inverse = A(1) / s.total[i];
      A* o = s.o + i * hd;
      for (int64_t d = 0; d < hd; ++d) o[d] *= inverse;
      saved.lse[head0 + q0 + i] = s.maximum[i] + math::log(s.total[i]);
    });
    team_sync(team);
    const HeadRows<T> rows{out + b * S * C + h * hd, C};
    flash::store_rows(team, rows, s.o, q0, nq, hd, false);
  }
};

}  // namespace

template <typename T>
void flash_attention_forward(TeamShape shape, T* out, const FlashAttentionSaved<T>& saved,
                             const T* qkv, int64_t B, int64_t S, int64_t C, int64_t NH,
                             int64_t max_tile) {
  using A = Acc<T>;
  const int64_t hd = C / NH;
  const flash::TilePlan plan = flash::plan_tiles(
      S, hd, static_cast<int64_t>(sizeof(A)), forward_scratch, flash::device_tile_limits(max_tile));
  const int64_t tiles = (S + plan.tile - 1) / plan.tile;
  const A scale = A(1) / math::sqrt(static_cast<A>(hd));
  Kokkos::parallel_for("zeromini::flash_attention_forward",
                       flash::tile_policy(shape, B * NH * tiles, plan),
                       ForwardTeams<T>{qkv, out, saved, S, C, NH, hd, tiles, plan, scale});
}

#define ZM_INSTANTIATE(T)                                                                          \
  template void flash_attention_forward<T>(TeamShape, T*, const FlashAttentionSaved<T>&, const T*, \
                                           int64_t, int64_t, int64_t, int64_t, int64_t);
ZM_FOR_EACH_KERNEL_REAL(ZM_INSTANTIATE)
#undef ZM_INSTANTIATE

}  // namespace zm::kernels
