// Fused attention backward for teams of one host thread (flash_attention.hpp): a team per (batch,
// head) runs all the tile pairs of its head in one pass, the key tiles in order, each against the
// query tiles on and below the diagonal in order. dK and dV of the key tile accumulate in the
// team's scratch, and so does dQ of the whole head: one thread adds each row's contributions in
// key-tile order. The scores and their gradients are then made once per tile pair, not once in
// each of the GPU-style passes: five tile products per pair instead of seven.
#include "modules/fused_attention/flash_backward_inputs.hpp"

namespace zm::kernels::flash {

namespace {

// Scratch per team: BackwardInputs' tiles (six of tile x hd, two of tile x tile, two rows of
// statistics, the first six the query and output gradient tiles, the key and value tiles
// transposed, the dK and dV accumulators), then the key tile (tile x hd), the head's dQ (S x hd)
// and its rows' log-sum-exp and delta (S each).
int64_t head_scratch(int64_t tile, int64_t hd, int64_t S) {
  return 6 * tile * hd + 2 * tile * tile + 2 * tile + tile * hd + S * hd + 2 * S;
}

template <typename T>
struct HeadGradientTeams : BackwardInputs<T> {
  using A = Acc<T>;
  using Tiles = typename BackwardInputs<T>::Tiles;

  // The whole head's rows: dQ, and each query row's log-sum-exp and delta.
  struct Head {
    A *k, *dq, *lse, *delta;
  };

  // s.first: the dK accumulator; s.second: dV's.
  KOKKOS_INLINE_FUNCTION void operator()(const TeamMember& team) const {
    const int64_t bh = team.league_rank(), hd = this->head_size, length = this->S;
    Tiles s = this->tiles_of(team);
    flash::ScratchCursor<A> cursor{s.delta + this->plan.tile};  // after the tiles
    Head head;
    head.k = cursor.take(this->plan.tile * hd);
    head.dq = cursor.take(length * hd);
    head.lse = cursor.take(length);
    head.delta = cursor.take(length);
    const HeadRows<const T> out_rows = this->tokens(this->out, bh);
    const HeadRows<const T> dout_rows = this->tokens(this->dout, bh);
    for (int64_t t = 0; t < length; ++t) {
      const T* o = out_rows.row(t);
      const T* g = dout_rows.row(t);
      head.delta[t] = lane_sum<A>(hd, [&](int64_t d) { return A(g[d]) * A(o[d]); });
      head.lse[t] = this->saved.lse[bh * length + t];
    }
    for (int64_t e = 0; e < length * hd; ++e) head.dq[e] = A(0);
    for (int64_t kt = 0; kt < this->tiles; ++kt) key_tile(team, s, head, bh, kt);
    flash::store_rows(team, this->gradient(0, bh), head.dq, 0, length, hd, this->accumulate);
  }

  // dK and dV of the key tile kt, and its contributions to dQ.
  KOKKOS_INLINE_FUNCTION void key_tile(const TeamMember& team, Tiles s, const Head& head,
                                       int64_t bh, int64_t kt) const {
    const int64_t hd = this->head_size, k0 = kt * this->plan.tile, nk = this->rows_of(kt);
    this->load_keys(team, s, bh, k0, nk);
    flash::load_rows(team, head.k, this->heads(this->saved.k, bh), k0, nk, hd);
    for (int64_t e = 0; e < nk * hd; ++e) {
      s.first[e] = A(0);
      s.second[e] = A(0);
    }
    for (int64_t qt = kt; qt < this->tiles; ++qt) {
      const int64_t q0 = qt * this->plan.tile, nq = this->rows_of(qt);
      flash::load_rows(team, s.q, this->heads(this->saved.q, bh), q0, nq, hd);
      flash::load_rows(team, s.dout, this->tokens(this->dout, bh), q0, nq, hd);
      s.lse = head.lse + q0;
      s.delta = head.delta + q0;
      this->recompute(team, s, q0, nq, k0, nk);
      const CausalBand band{q0 - k0};
      flash::accumulate(team, s.second, Strided<const A>{s.p, 1, nk}, s.dout, nk, nq, hd, band,
                        RowsAre::Keys);
      flash::accumulate(team, s.first, Strided<const A>{s.ds, 1, nk}, s.q, nk, nq, hd, band,
                        RowsAre::Keys);
      flash::accumulate(team, head.dq + q0 * hd, Strided<const A>{s.ds, nk, 1}, head.k, nq, nk, hd,
                        band, RowsAre::Queries);
    }
    flash::store_rows(team, this->gradient(1, bh), s.first, k0, nk, hd, this->accumulate);
    flash::store_rows(team, this->gradient(2, bh), s.second, k0, nk, hd, this->accumulate);
  }
};

}  // namespace

template <typename T>
void backward_by_head(TeamShape shape, BackwardInputs<T> in, int64_t B, const TileLimits& limits) {
  const int64_t hd = in.head_size;
  in.plan = plan_tiles(in.S, hd, static_cast<int64_t>(sizeof(Acc<T>)), head_scratch, limits);
  in.tiles = (in.S + in.plan.tile - 1) / in.plan.tile;
  Kokkos::parallel_for("zeromini::flash_attention_backward_by_head",
                       tile_policy(shape, B * in.NH, in.plan), HeadGradientTeams<T>{in});
}

#define ZM_INSTANTIATE(T) \
  template void backward_by_head<T>(TeamShape, BackwardInputs<T>, int64_t, const TileLimits&);
ZM_FOR_EACH_KERNEL_REAL(ZM_INSTANTIATE)
#undef ZM_INSTANTIATE

}  // namespace zm::kernels::flash
