// Fused attention backward (flash_attention.hpp): the probabilities recomputed tile by tile from
// the saved log-sum-exp. GPU-style teams: dQ by a team per query tile, then dK and dV by a team
// per key tile; teams of one host thread: flash_attention_backward_host.cpp.
#include <algorithm>

#include "modules/fused_attention/flash_backward_inputs.hpp"

namespace zm::kernels {

// In this file S is the sequence length (T in the headers) and T the element type.
namespace {

using flash::BackwardInputs;
using flash::CausalBand;
using flash::HeadRows;
using flash::RowsAre;
using flash::Strided;

// Scratch per team of either GPU-style pass: six tiles of tile x hd (the query and output
// gradient tiles, the key and value tiles transposed, and two more: the dQ pass's key tile and
// dQ accumulator, or the dK/dV pass's accumulators), the probabilities and the scores'
// gradients (tile x tile each), and the query rows' log-sum-exp and delta.
int64_t backward_scratch(int64_t tile, int64_t hd, int64_t) {
  return 6 * tile * hd + 2 * tile * tile + 2 * tile;
}

template <typename T>
struct QueryGradientTeams : BackwardInputs<T> {
  using A = Acc<T>;
  using Tiles = typename BackwardInputs<T>::Tiles;

  // s.first: the key tile; s.second: the dQ accumulator.
  KOKKOS_INLINE_FUNCTION void operator()(const TeamMember& team) const {
    const int64_t qt = team.league_rank() % this->tiles, bh = team.league_rank() / this->tiles;
    const int64_t hd = this->head_size, q0 = qt * this->plan.tile, nq = this->rows_of(qt);
    const Tiles s = this->tiles_of(team);
    const HeadRows<const T> out_rows = this->tokens(this->out, bh);
    flash::load_rows(team, s.q, this->heads(this->saved.q, bh), q0, nq, hd);
    flash::load_rows(team, s.dout, this->tokens(this->dout, bh), q0, nq, hd);
    team_for(team, nq * hd, [&](int64_t e) { s.second[e] = A(0); });
    team_sync(team);
    team_for(team, nq, [&](int64_t i) {
      const T* o = out_rows.row(q0 + i);
      const A* g = s.dout + i * hd;
      s.delta[i] = lane_sum<A>(hd, [&](int64_t d) { return g[d] * A(o[d]); });
      this->delta[bh * this->S + q0 + i] = s.delta[i];
      s.lse[i] = this->saved.lse[bh * this->S + q0 + i];
    });
    for (int64_t kt = 0; kt <= qt; ++kt) {
      const int64_t k0 = kt * this->plan.tile, nk = this->rows_of(kt);
      team_sync(team);  // the previous key tile's products are done with its tiles
      this->load_keys(team, s, bh, k0, nk);
      flash::load_rows(team, s.first, this->heads(this->saved.k, bh), k0, nk, hd);
      team_sync(team);
      this->recompute(team, s, q0, nq, k0, nk);
      team_sync(team);
      flash::accumulate(team, s.second, Strided<const A>{s.ds, nk, 1}, s.first, nq, nk, hd,
                        CausalBand{q0 - k0}, RowsAre::Queries);
    }
    team_sync(team);
    flash::store_rows(team, this->gradient(0, bh), s.second, q0, nq, hd, this->accumulate);
  }
};

template <typename T>
struct KeyValueGradientTeams : BackwardInputs<T> {
  using A = Acc<T>;
  using Tiles = typename BackwardInputs<T>::Tiles;

  // s.first: the dK accumulator; s.second: dV's.
  KOKKOS_INLINE_FUNCTION void operator()(const TeamMember& team) const {
    const int64_t kt = team.league_rank() % this->tiles, bh = team.league_rank() / this->tiles;
    const int64_t hd = this->head_size, k0 = kt * this->plan.tile, nk = this->rows_of(kt);
    const Tiles s = this->tiles_of(team);
    this->load_keys(team, s, bh, k0, nk);
    team_for(team, nk * hd, [&](int64_t e) {
      s.first[e] = A(0);
      s.second[e] = A(0);
    });
    // The query tiles on and below the diagonal, in order.
    for (int64_t qt = kt; qt < this->tiles; ++qt) {
      const int64_t q0 = qt * this->plan.tile, nq = this->rows_of(qt);
      team_sync(team);  // the previous query tile's products are done with its tiles
      flash::load_rows(team, s.q, this->heads(this->saved.q, bh), q0, nq, hd);
      flash::load_rows(team, s.dout, this->tokens(this->dout, bh), q0, nq, hd);
      team_for(team, nq, [&](int64_t i) {
        s.lse[i] = this->saved.lse[bh * this->S + q0 + i];
        s.delta[i] = this->delta[bh * this->S + q0 + i];
      });
      team_sync(team);
      this->recompute(team, s, q0, nq, k0, nk);
      team_sync(team);
      // dV += p^T dout, dK += ds^T q: p and ds read transposed, keys as rows.
      const CausalBand band{q0 - k0};
      flash::accumulate(team, s.second, Strided<const A>{s.p, 1, nk}, s.dout, nk, nq, hd, band,
                        RowsAre::Keys);
      flash::accumulate(team, s.first, Strided<const A>{s.ds, 1, nk}, s.q, nk, nq, hd, band,
                        RowsAre::Keys);
    }
    team_sync(team);
    flash::store_rows(team, this->gradient(1, bh), s.first, k0, nk, hd, this->accumulate);
    flash::store_rows(team, this->gradient(2, bh), s.second, k0, nk, hd, this->accumulate);
  }
};

}  // namespace

template <typename T>
void flash_attention_backward(TeamShape shape, T* dqkv, Acc<T>* delta, const T* dout, const T* out,
                              const FlashAttentionSaved<T>& saved, int64_t B, int64_t S, int64_t C,
                              int64_t NH, GradWrite write, int64_t max_tile) {
  using A = Acc<T>;
  const int64_t hd = C / NH, element = static_cast<int64_t>(sizeof(A));
  BackwardInputs<T> in{saved, out, dout, delta, dqkv, S, C, NH, hd, 0, {}, A(0), false};
  in.scale = A(1) / math::sqrt(static_cast<A>(hd));
  in.accumulate = write == GradWrite::Accumulate;
  const flash::TileLimits limits = flash::device_tile_limits(max_tile);
  // Teams of one host thread take the pass per head (no scores made twice); GPU teams, and host
  // teams of several threads that run their code paths, the two passes below.
  if (kHostExecution && std::min(shape.team_size, ExecSpace().concurrency()) == 1)
    return flash::backward_by_head(shape, in, B, limits);
  in.plan = flash::plan_tiles(S, hd, element, backward_scratch, limits);
  in.tiles = (S + in.plan.tile - 1) / in.plan.tile;
  Kokkos::parallel_for("zeromini::flash_attention_backward_dq",
                       flash::tile_policy(shape, B * NH * in.tiles, in.plan),
                       QueryGradientTeams<T>{in});
  Kokkos::parallel_for("zeromini::flash_attention_backward_dkv",
                       flash::tile_policy(shape, B * NH * in.tiles, in.plan),
                       KeyValueGradientTeams<T>{in});
}

#define ZM_INSTANTIATE(T)                                                                    \
  template void flash_attention_backward<T>(TeamShape, T*, Acc<T>*, const T*, const T*,      \
                                            const FlashAttentionSaved<T>&, int64_t, int64_t, \
                                            int64_t, int64_t, GradWrite, int64_t);
ZM_FOR_EACH_KERNEL_REAL(ZM_INSTANTIATE)
#undef ZM_INSTANTIATE

}  // namespace zm::kernels
