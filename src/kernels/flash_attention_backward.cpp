// Fused attention backward (flash_attention.hpp): the probabilities recomputed tile by tile from
// the saved log-sum-exp; dQ by a team per query tile, then dK and dV by a team per key tile.
#include "kernels/fast_math.hpp"
#include "kernels/flash_attention.hpp"
#include "kernels/flash_plan.hpp"
#include "kernels/flash_tiles.hpp"

namespace zm::kernels {

// In this file S is the sequence length (T in the headers) and T the element type.
namespace {

using flash::HeadRows;

// What both passes read: the saved heads, the output and its gradient, the row statistics.
template <typename T>
struct BackwardInputs {
  using A = Acc<T>;
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
};

// Scratch per team of the dQ pass: the query tile, the output gradient tile, the key tile and
// its transpose, the value tile transposed, the dQ accumulator (tile x hd each); probabilities
// and their gradients (tile x tile each); each row's log-sum-exp and delta.
int64_t dq_scratch(int64_t tile, int64_t hd) {
  return 6 * tile * hd + 2 * tile * tile + 2 * tile;
}

template <typename T>
struct QueryGradientTeams : BackwardInputs<T> {
  using A = Acc<T>;

  struct Tiles {
    A *q, *dout, *k, *kt, *vt, *dq, *p, *ds, *lse, *delta;
  };

  KOKKOS_INLINE_FUNCTION void operator()(const TeamMember& team) const {
    const int64_t qt = team.league_rank() % this->tiles, bh = team.league_rank() / this->tiles;
    const int64_t tile = this->plan.tile, hd = this->head_size, q0 = qt * tile,
                  nq = this->rows_of(qt);
    flash::ScratchCursor<A> cursor{flash::team_scratch<A>(team, this->plan)};
    Tiles s;
    s.q = cursor.take(tile * hd);
    s.dout = cursor.take(tile * hd);
    s.k = cursor.take(tile * hd);
    s.kt = cursor.take(tile * hd);
    s.vt = cursor.take(tile * hd);
    s.dq = cursor.take(tile * hd);
    s.p = cursor.take(tile * tile);
    s.ds = cursor.take(tile * tile);
    s.lse = cursor.take(tile);
    s.delta = cursor.take(tile);
    const HeadRows<const T> out_rows = this->tokens(this->out, bh);
    flash::load_rows(team, s.q, this->heads(this->saved.q, bh), q0, nq, hd);
    flash::load_rows(team, s.dout, this->tokens(this->dout, bh), q0, nq, hd);
    team_for(team, nq * hd, [&](int64_t e) { s.dq[e] = A(0); });
    team_sync(team);
    team_for(team, nq, [&](int64_t i) {
      const T* o = out_rows.row(q0 + i);
      const A* g = s.dout + i * hd;
      s.delta[i] = lane_sum<A>(hd, [&](int64_t d) { return g[d] * A(o[d]); });
      this->delta[bh * this->S + q0 + i] = s.delta[i];
      s.lse[i] = this->saved.lse[bh * this->S + q0 + i];
    });
    for (int64_t kt = 0; kt <= qt; ++kt) key_tile(team, s, bh, q0, nq, kt);
    team_sync(team);
    flash::store_rows(team, this->gradient(0, bh), s.dq, q0, nq, hd, this->accumulate);
  }

  // dQ of the query tile at q0 += the contributions of the key tile kt.
  KOKKOS_INLINE_FUNCTION void key_tile(const TeamMember& team, const Tiles& s, int64_t bh,
                                       int64_t q0, int64_t nq, int64_t kt) const {
    const int64_t hd = this->head_size, k0 = kt * this->plan.tile, nk = this->rows_of(kt);
    const HeadRows<const T> k_rows = this->heads(this->saved.k, bh);
    team_sync(team);  // the previous key tile's products are done with its tiles
    flash::load_rows(team, s.k, k_rows, k0, nk, hd);
    flash::load_rows_transposed(team, s.kt, k_rows, k0, nk, hd);
    flash::load_rows_transposed(team, s.vt, this->heads(this->saved.v, bh), k0, nk, hd);
    team_sync(team);
    flash::scores(team, s.p, s.q, s.kt, nq, nk, hd, this->scale);
    flash::scores(team, s.ds, s.dout, s.vt, nq, nk, hd, A(1));
    team_sync(team);
    // ds: the probabilities' gradient becomes the scores', the score scale folded in.
    team_for(team, nq * nk, [&](int64_t e) {
      const int64_t i = e / nk, j = e % nk;
      const A prob = k0 + j <= q0 + i ? fast_exp(s.p[e] - s.lse[i]) : A(0);
      s.ds[e] = prob * (s.ds[e] - s.delta[i]) * this->scale;
    });
    team_sync(team);
    flash::accumulate(team, s.dq, s.ds, s.k, nq, nk, hd);
  }
};

// Scratch per team of the dK/dV pass: the key and value tiles, the query and output gradient
// tiles and their transposes, the dK and dV accumulators (tile x hd each); probabilities and
// score gradients, keys by queries (tile x tile each); the query rows' log-sum-exp and delta.
int64_t dkv_scratch(int64_t tile, int64_t hd) {
  return 8 * tile * hd + 2 * tile * tile + 2 * tile;
}

template <typename T>
struct KeyValueGradientTeams : BackwardInputs<T> {
  using A = Acc<T>;

  struct Tiles {
    A *k, *v, *q, *qt, *dout, *doutt, *dk, *dv, *p, *ds, *lse, *delta;
  };

  KOKKOS_INLINE_FUNCTION void operator()(const TeamMember& team) const {
    const int64_t kt = team.league_rank() % this->tiles, bh = team.league_rank() / this->tiles;
    const int64_t tile = this->plan.tile, hd = this->head_size, k0 = kt * tile,
                  nk = this->rows_of(kt);
    flash::ScratchCursor<A> cursor{flash::team_scratch<A>(team, this->plan)};
    Tiles s;
    s.k = cursor.take(tile * hd);
    s.v = cursor.take(tile * hd);
    s.q = cursor.take(tile * hd);
    s.qt = cursor.take(tile * hd);
    s.dout = cursor.take(tile * hd);
    s.doutt = cursor.take(tile * hd);
    s.dk = cursor.take(tile * hd);
    s.dv = cursor.take(tile * hd);
    s.p = cursor.take(tile * tile);
    s.ds = cursor.take(tile * tile);
    s.lse = cursor.take(tile);
    s.delta = cursor.take(tile);
    flash::load_rows(team, s.k, this->heads(this->saved.k, bh), k0, nk, hd);
    flash::load_rows(team, s.v, this->heads(this->saved.v, bh), k0, nk, hd);
    team_for(team, nk * hd, [&](int64_t e) {
      s.dk[e] = A(0);
      s.dv[e] = A(0);
    });
    // The query tiles on and below the diagonal, in order.
    for (int64_t qt = kt; qt < this->tiles; ++qt) query_tile(team, s, bh, k0, nk, qt);
    team_sync(team);
    flash::store_rows(team, this->gradient(1, bh), s.dk, k0, nk, hd, this->accumulate);
    flash::store_rows(team, this->gradient(2, bh), s.dv, k0, nk, hd, this->accumulate);
  }

  // dK and dV of the key tile at k0 += the contributions of the query tile qt.
  KOKKOS_INLINE_FUNCTION void query_tile(const TeamMember& team, const Tiles& s, int64_t bh,
                                         int64_t k0, int64_t nk, int64_t qt) const {
    const int64_t hd = this->head_size, q0 = qt * this->plan.tile, nq = this->rows_of(qt);
    const HeadRows<const T> q_rows = this->heads(this->saved.q, bh);
    const HeadRows<const T> dout_rows = this->tokens(this->dout, bh);
    team_sync(team);  // the previous query tile's products are done with its tiles
    flash::load_rows(team, s.q, q_rows, q0, nq, hd);
    flash::load_rows_transposed(team, s.qt, q_rows, q0, nq, hd);
    flash::load_rows(team, s.dout, dout_rows, q0, nq, hd);
    flash::load_rows_transposed(team, s.doutt, dout_rows, q0, nq, hd);
    team_for(team, nq, [&](int64_t i) {
      s.lse[i] = this->saved.lse[bh * this->S + q0 + i];
      s.delta[i] = this->delta[bh * this->S + q0 + i];
    });
    team_sync(team);
    flash::scores(team, s.p, s.k, s.qt, nk, nq, hd, this->scale);
    flash::scores(team, s.ds, s.v, s.doutt, nk, nq, hd, A(1));
    team_sync(team);
    team_for(team, nk * nq, [&](int64_t e) {
      const int64_t j = e / nq, i = e % nq;
      const A prob = k0 + j <= q0 + i ? fast_exp(s.p[e] - s.lse[i]) : A(0);
      s.p[e] = prob;
      s.ds[e] = prob * (s.ds[e] - s.delta[i]) * this->scale;
    });
    team_sync(team);
    flash::accumulate(team, s.dv, s.p, s.dout, nk, nq, hd);
    flash::accumulate(team, s.dk, s.ds, s.q, nk, nq, hd);
  }
};

}  // namespace

template <typename T>
void flash_attention_backward(TeamShape shape, T* dqkv, Acc<T>* delta, const T* dout, const T* out,
                              const FlashAttentionSaved<T>& saved, int64_t B, int64_t S, int64_t C,
                              int64_t NH, GradWrite write) {
  using A = Acc<T>;
  const int64_t hd = C / NH, element = static_cast<int64_t>(sizeof(A));
  BackwardInputs<T> in{saved, out, dout, delta, dqkv, S, C, NH, hd, 0, {}, A(0), false};
  in.scale = A(1) / math::sqrt(static_cast<A>(hd));
  in.accumulate = write == GradWrite::Accumulate;
  // The passes may tile differently (their scratch differs); each counts its own tiles.
  in.plan = flash::plan_tiles(S, hd, element, dq_scratch);
  in.tiles = (S + in.plan.tile - 1) / in.plan.tile;
  Kokkos::parallel_for("zeromini::flash_attention_backward_dq",
                       flash::tile_policy(shape, B * NH * in.tiles, in.plan),
                       QueryGradientTeams<T>{in});
  in.plan = flash::plan_tiles(S, hd, element, dkv_scratch);
  in.tiles = (S + in.plan.tile - 1) / in.plan.tile;
  Kokkos::parallel_for("zeromini::flash_attention_backward_dkv",
                       flash::tile_policy(shape, B * NH * in.tiles, in.plan),
                       KeyValueGradientTeams<T>{in});
}

#define ZM_INSTANTIATE(T)                                                                    \
  template void flash_attention_backward<T>(TeamShape, T*, Acc<T>*, const T*, const T*,      \
                                            const FlashAttentionSaved<T>&, int64_t, int64_t, \
                                            int64_t, int64_t, GradWrite);
ZM_FOR_EACH_KERNEL_REAL(ZM_INSTANTIATE)
#undef ZM_INSTANTIATE

}  // namespace zm::kernels
