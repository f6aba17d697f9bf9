#include "modules/offload/host_tier.hpp"

#include <algorithm>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/stage_spec.hpp"
#include "kernels/adamw.hpp"
#include "kernels/elementwise.hpp"
#include "model/layout.hpp"
#include "modules/offload/host_copies.hpp"
#include "modules/offload/host_state_store.hpp"
#include "modules/offload/host_sums.hpp"
#include "zero/engine.hpp"
#include "zero/schedule.hpp"

namespace zm {

namespace {

// The step's copies, shared by the engine's parts (host_copies.hpp).
using Copies = std::shared_ptr<const std::vector<ScheduledTransfer>>;

// The largest piece of a unit the optimizer updates on a rank.
int64_t largest_piece(const ScheduleContext& context, const StageSpec& spec) {
  const int optim_pieces = pieces(context.mesh.mesh, context.mesh.placements(spec).optim);
  int64_t largest = 0;
  for (int u = 0; u < context.partition.num_units(); ++u)
    largest = std::max(largest, context.partition.unit(u).padded / optim_pieces);
  return largest;
}

// The first logical element of unit u's optimizer piece on this rank, and its (padded) count.
template <typename Real>
int64_t piece_count(const ZeroEngineT<Real>& engine, int u) {
  return engine.partition().unit(u).padded / engine.optimizer_piece().count;
}
template <typename Real>
int64_t piece_begin(const ZeroEngineT<Real>& engine, int u) {
  return engine.optimizer_piece().index * piece_count(engine, u);
}

// AdamW on the host (Reduce: the type of the reduced gradients it reads, Real or float).
template <typename Real, typename Reduce>
class HostAdamW final : public UnitOptimizerT<Real> {
 public:
  static constexpr bool kMixed = !std::is_same_v<Real, float>;

  HostAdamW(const Offload& offload, Copies copies, std::shared_ptr<HostStateStore> store,
            PlannedAllocator& alloc)
      : offload_(offload), copies_(std::move(copies)), store_(std::move(store)) {
    if (alloc.has("grad_stage")) grad_stage_ = alloc.take<Reduce>("grad_stage");
    if (alloc.has("param_stage")) param_stage_ = alloc.take<Real>("param_stage");
  }

  // With the gradient shard on the host, backward brought the gradients there already.
  void begin(ZeroEngineT<Real>& engine) override {
    if (fetches()) gradients_to_host(0, engine);
  }
  void update(int u, const OptimizerSettings& s, ZeroEngineT<Real>& engine) override {
    if (store_ && u == 0) store_->begin(s.step);
    this_rank_copies().wait();  // unit u's gradients are on the host
    if (fetches() && u + 1 < engine.partition().num_units())
      gradients_to_host(u + 1, engine);  // in flight during u's update
    const HostUnitState state = state_of(u, engine);
    update_on_host(u, state, s, engine);
    update_to_device(u, state, engine);
    this_rank_copies().wait();  // the update is on the device before any gather reads it
    if (store_) store_->updated(u);
  }
  void copy_state(int state, int u, int64_t e, int64_t n, float* host, bool to_host,
                  ZeroEngineT<Real>& engine) override {
    if (store_) return store_->copy_state(state, u, e, n, host, to_host);
    UnitOptimizerT<Real>::copy_state(state, u, e, n, host, to_host, engine);
  }

 private:
  bool fetches() const { return !offload_.gradients; }
  // Two slots of the largest piece each: unit u's, and the next unit's arriving meanwhile.
  int64_t slot_offset(int u) const {
    return (u % 2) * static_cast<int64_t>(grad_stage_.size() / 2);
  }

  void gradients_to_host(int u, ZeroEngineT<Real>& engine) {
    const ScheduledTransfer& t = copy_of(*copies_, u, TransferRole::GradientsToHost);
    const int64_t count = piece_count(engine, u);
    ZM_ASSERT(t.elements == count && static_cast<size_t>(t.element_bytes) == sizeof(Reduce),
              "unit {}: the copy list moves {} x {}B of gradients, the engine {} x {}B", u,
              t.elements, t.element_bytes, count, sizeof(Reduce));
    this_rank_copies().copy(t.direction, grad_stage_.data() + slot_offset(u),
                            engine.reduced_grad_at(u, piece_begin(engine, u)),
                            static_cast<size_t>(t.bytes()), u);
  }

  // Unit u's state in host memory, at its piece's first element: the store's, or the engine's.
  HostUnitState state_of(int u, ZeroEngineT<Real>& engine) {
    if (store_) return store_->fetch(u);
    const int64_t first = piece_begin(engine, u);
    return {engine.master_at(u, first), engine.adam_m_at(u, first), engine.adam_v_at(u, first)};
  }

  void update_on_host(int u, const HostUnitState& state, const OptimizerSettings& s,
                      ZeroEngineT<Real>& engine) {
    const ParamLayout& layout = engine.partition().layout();
    const int64_t first = piece_begin(engine, u);
    const auto [begin, end] = engine.held_range(engine.optimizer_storage(), u);
    for (const TensorSegment& seg : engine.partition().segments(u, begin, end)) {
      const bool decay = layout.tensors()[static_cast<size_t>(seg.tensor)].decay;
      const kernels::AdamWParams hp{
          s.lr, s.beta1, s.beta2, s.eps, decay ? s.weight_decay : 0.0f, s.grad_scale, s.step};
      const int64_t e = seg.unit_offset;
      // The reduced gradients: the host shard itself where backward streamed it there (or the
      // store's copy of it), else the piece staged for the step.
      const Reduce* grads = !offload_.gradients ? grad_stage_.data() + (e - first) + slot_offset(u)
                            : state.grads
                                ? static_cast<const Reduce*>(state.grads) + (e - first)
                                : static_cast<const Reduce*>(engine.reduced_grad_at(u, e));
      float* master = state.master + (e - first);
      float* m = state.adam_m + (e - first);
      float* v = state.adam_v + (e - first);
#if ZEROMINI_HAVE_BF16
      if constexpr (kMixed) {
        // The bf16 values: into the shard itself (on the host, or the store's), or staged for
        // the copy back.
        Real* params = !offload_.params ? param_stage_.data() + (e - first)
                       : state.params   ? static_cast<Real*>(state.params) + (e - first)
                                        : engine.param_at(u, e);
        kernels::host_adamw_update_mixed(master, grads, m, v, params, seg.length, hp);
      } else
#endif
      {
        kernels::host_adamw_update(master, grads, m, v, seg.length, hp);
      }
    }
  }

  void update_to_device(int u, const HostUnitState& state, ZeroEngineT<Real>& engine) {
    if (offload_.params) return;  // AdamW wrote the host shard itself
    const ScheduledTransfer& t = copy_of(*copies_, u, TransferRole::UpdateToDevice);
    ZM_ASSERT(t.elements == piece_count(engine, u) && t.element_bytes == sizeof(Real),
              "unit {}: the copy list returns {} x {}B of parameters, the engine {} x {}B", u,
              t.elements, t.element_bytes, piece_count(engine, u), sizeof(Real));
    const int64_t first = piece_begin(engine, u);
    const void* updated = kMixed ? static_cast<const void*>(param_stage_.data())
                                 : static_cast<const void*>(state.master);
    this_rank_copies().copy(t.direction, engine.param_at(u, first), updated,
                            static_cast<size_t>(t.bytes()), u);
  }

  Offload offload_;
  Copies copies_;
  std::shared_ptr<HostStateStore> store_;  // null: the state in the engine's host buffers
  TrackedBuffer<Reduce> grad_stage_;       // two pieces of the reduced gradients
  TrackedBuffer<Real> param_stage_;        // under bf16 with the parameters on the device
};

// The gradient shard on the host: each micro-step's received sum copied there (the copy list's
// GradientsToHost), and what is added arrives in host staging first. Where the store keeps the
// shard (MemCategory::Storage), each sum lands in the store's host memory for the unit instead,
// is summed there and handed back to the store; the norm's sums of squares are taken there, the
// last micro-step's kept, with the core's kernel over the core's ranges (the same order).
template <typename Real, typename Reduce>
class HostShardHome final : public ShardHomeT<Real> {
 public:
  HostShardHome(Copies copies, std::shared_ptr<HostStateStore> store, PlannedAllocator& alloc)
      : copies_(std::move(copies)), store_(std::move(store)) {
    if (alloc.has("grad_recv_host")) stage_ = alloc.take<Reduce>("grad_recv_host");
  }

  // A receive buffer's previous sum may still be on its way to the host.
  void before_receive(ZeroEngineT<Real>&) override { this_rank_copies().wait(); }
  void finish(ZeroEngineT<Real>&) override { this_rank_copies().wait(); }

  // Straight into the shard (or its fp32 sum); waited where its entry says: the one
  // micro-step's copy goes on during backward until the receive buffers are taken again.
  void place(int unit, void* dst, const void* received, int64_t n,
             ZeroEngineT<Real>& engine) override {
    const ScheduledTransfer& t = gradients_copy(unit, n);
    if (store_) dst = store_->gradients(unit, false);
    this_rank_copies().copy(t.direction, dst, received, static_cast<size_t>(t.bytes()), unit);
    if (t.waited == StepPoint::Posted || store_) this_rank_copies().wait();
    if (store_) to_store(unit, dst, engine);
  }
  void add(int unit, void* dst, const void* received, int64_t n,
           ZeroEngineT<Real>& engine) override {
    if (store_) dst = store_->gradients(unit, true);
    kernels::host_add_into(static_cast<Reduce*>(dst), staged(unit, received, n), n);
    if (store_) to_store(unit, dst, engine);
  }
  void accumulate(int unit, float* sum, const Real* received, Real* rounded, int64_t n, bool first,
                  ZeroEngineT<Real>&) override {
    ZM_ASSERT(!store_, "an fp32 sum of the micro-steps in a store");
    if constexpr (std::is_same_v<Real, Reduce>)
      kernels::host_accumulate_gradient(sum, staged(unit, received, n), rounded, n, first);
    else
      ZM_ASSERT(false, "an fp32 sum of gradients reduced in fp32");
  }
  double sum_of_squares(int u, int64_t e, int64_t n, const ZeroEngineT<Real>& engine) override {
    if (!store_) return engine.sum_of_squares_held(u, e, n);
    const std::vector<std::pair<int64_t, int64_t>>& ranges = norm_ranges_[static_cast<size_t>(u)];
    for (size_t r = 0; r < ranges.size(); ++r)
      if (ranges[r] == std::make_pair(e, n)) return sums_[static_cast<size_t>(u)][r];
    ZM_ASSERT(false, "unit {}: the norm asks for [{}, +{}), which the store's shard did not sum", u,
              e, n);
    return 0.0;
  }

 private:
  const ScheduledTransfer& gradients_copy(int unit, int64_t n) const {
    const ScheduledTransfer& t = copy_of(*copies_, unit, TransferRole::GradientsToHost);
    ZM_ASSERT(t.elements == n, "unit {}: the copy list copies {} gradients, the shard is {}", unit,
              t.elements, n);
    return t;
  }
  // The received sum copied into host staging (waited: the host adds it).
  const Reduce* staged(int unit, const void* received, int64_t n) {
    const ScheduledTransfer& t = gradients_copy(unit, n);
    this_rank_copies().copy(t.direction, stage_.data(), received, static_cast<size_t>(t.bytes()),
                            unit);
    this_rank_copies().wait();
    return stage_.data();
  }
  // The unit's shard, summed so far, in the store's memory `shard`: its norm ranges' sums of
  // squares (the last micro-step's stand), then back to the store.
  void to_store(int unit, void* shard, const ZeroEngineT<Real>& engine) {
    const auto u = static_cast<size_t>(unit);
    if (norm_ranges_.size() <= u) norm_ranges_.resize(u + 1), sums_.resize(u + 1);
    norm_ranges_[u] = engine.norm_ranges(unit);
    sums_[u].clear();
    const int64_t count = engine.partition().unit(unit).shard;
    const int64_t first = engine.comm().rank() * count;
    for (const auto& [e, n] : norm_ranges_[u]) {
      ZM_ASSERT(e >= first && e + n <= first + count,
                "unit {}: the norm counts [{}, +{}), outside this rank's shard [{}, +{})", unit, e,
                n, first, count);
      sums_[u].push_back(kernels::sum_of_squares(
          engine.team_shape(), static_cast<const Reduce*>(shard) + (e - first), n));
    }
    store_->gradients_written(unit);
  }

  Copies copies_;
  std::shared_ptr<HostStateStore> store_;  // where it keeps the shard (MemCategory::Storage)
  TrackedBuffer<Reduce> stage_;            // with accumulation: what is added
  std::vector<std::vector<std::pair<int64_t, int64_t>>> norm_ranges_;  // per unit
  std::vector<std::vector<double>> sums_;  // their sums of squares, as last written
};

// The parameter shard on the host, or brought there by the store that keeps it: staged into its
// own place in the slot (the copy list's ShardToDevice), then gathered in place.
template <typename Real>
class StagedShard final : public ShardSourceT<Real> {
 public:
  StagedShard(Copies copies, std::shared_ptr<HostStateStore> store)
      : copies_(std::move(copies)), store_(std::move(store)) {}
  const Real* shard(int unit, Real* place, ZeroEngineT<Real>& engine) override {
    const ScheduledTransfer& t = copy_of(*copies_, unit, TransferRole::ShardToDevice);
    const int64_t count = engine.partition().unit(unit).shard;
    ZM_ASSERT(t.elements == count && t.element_bytes == sizeof(Real),
              "unit {}: the copy list stages {} x {}B, the shard is {} x {}B", unit, t.elements,
              t.element_bytes, count, sizeof(Real));
    const Real* shard = store_ ? static_cast<const Real*>(store_->fetch_shard(unit))
                               : engine.param_at(unit, engine.comm().rank() * count);
    this_rank_copies().copy(t.direction, place, shard, static_cast<size_t>(t.bytes()), unit);
    this_rank_copies().wait();
    return place;
  }

 private:
  Copies copies_;
  std::shared_ptr<HostStateStore> store_;  // where it keeps the shard (MemCategory::Storage)
};

template <typename Real, typename Reduce>
TierParts<Real> make_parts(const Offload& offload, const HostStoreMaker& make_store,
                           ZeroEngineT<Real>& engine, PlannedAllocator& alloc) {
  // The engine's step schedule is built: its collectives place the staged shard's copies.
  const StageSpec& spec = stage_spec(engine.stage());
  const Copies copies = std::make_shared<const std::vector<ScheduledTransfer>>(
      host_copies(spec, schedule_context(spec, engine.partition(), engine.options(), engine.mesh()),
                  engine.schedule().collectives()));
  TierParts<Real> parts;
  const std::shared_ptr<HostStateStore> store =
      offload.optimizer && make_store ? make_store(engine, alloc) : nullptr;
  if (offload.optimizer)
    parts.optimizer = std::make_unique<HostAdamW<Real, Reduce>>(offload, copies, store, alloc);
  const bool grads_in_store = engine.homes().grads == MemCategory::Storage;
  if (offload.gradients)
    parts.gradients = std::make_unique<HostShardHome<Real, Reduce>>(
        copies, grads_in_store ? store : nullptr, alloc);
  const bool shard_in_store = engine.homes().params == MemCategory::Storage;
  if (offload.params)
    parts.parameters =
        std::make_unique<StagedShard<Real>>(copies, shard_in_store ? store : nullptr);
  return parts;
}

class HostTier final : public StateTier {
 public:
  explicit HostTier(const OffloadSettings& settings)
      : settings_(settings), store_(host_store(settings.store)) {}

  StateHomes homes(const StageSpec& spec, const ZeroMesh& mesh) const override {
    const Offload offload = offload_of(settings_, spec, mesh);
    StateHomes homes;
    if (offload.params)
      homes.params = settings_.params_in_store ? MemCategory::Storage : MemCategory::Host;
    if (offload.gradients)
      homes.grads = settings_.grads_in_store ? MemCategory::Storage : MemCategory::Host;
    if (offload.optimizer) homes.optimizer = store_ ? MemCategory::Storage : MemCategory::Host;
    return homes;
  }

  // `plan --schedule`: the unit's copies after its collectives.
  std::vector<std::string> describe(const StageSpec& spec, const ScheduleContext& context,
                                    const std::vector<ScheduledCollective>& collectives,
                                    int unit) const override {
    return describe_copies(host_copies(spec, context, collectives), unit);
  }

  // An evaluation's forward stages the parameter shard of every unit it gathers.
  CopyVolume forward_only_copies(
      const StageSpec& spec, const ScheduleContext& context,
      const std::vector<ScheduledCollective>& collectives) const override {
    const PlannedTransfers planned =
        planned_forward_only_copies(host_copies(spec, context, collectives));
    return {planned.total_bytes(), planned.calls[0] + planned.calls[1]};
  }

  // Bounded staging, reused unit by unit: two pieces of reduced gradients (one arriving while
  // the other is updated) and, under bf16 with the parameters on the device, one piece of
  // updated bf16 parameters on their way back; with the gradient shard on the host and several
  // micro-steps, one shard of what is added.
  std::vector<BufferSpec> buffers(const StageSpec& spec,
                                  const ScheduleContext& context) const override {
    const Offload offload = offload_in(context.options.homes);
    const PrecisionPolicy& policy = context.options.policy;
    std::vector<BufferSpec> out;
    if (!offload.optimizer) return out;
    const int64_t piece = largest_piece(context, spec);
    if (!offload.gradients)  // else the gradient shard itself is on the host
      out.push_back({"grad_stage", MemCategory::Host, 2 * piece, element_bytes(policy.reduce)});
    if (policy.mixed() && !offload.params)
      out.push_back({"param_stage", MemCategory::Host, piece, element_bytes(policy.compute)});
    if (offload.gradients && context.options.grad_accum > 1) {
      // The largest unit's shard: every padded unit splits evenly over the ranks.
      const Partition& partition = context.partition;
      const int64_t shard =
          partition.max_padded_unit(0, partition.num_units() - 1) / partition.ranks();
      out.push_back({"grad_recv_host", MemCategory::Host, shard, element_bytes(policy.reduce)});
    }
    if (settings_.store_buffers) {
      const std::vector<BufferSpec> staging = settings_.store_buffers(spec, context);
      out.insert(out.end(), staging.begin(), staging.end());
    }
    return out;
  }

  TierParts<float> parts(ZeroEngineT<float>& engine, PlannedAllocator& alloc) const override {
    return make_parts<float, float>(offload_in(engine.homes()), settings_.make_store, engine,
                                    alloc);
  }
#if ZEROMINI_HAVE_BF16
  TierParts<bf16> parts(ZeroEngineT<bf16>& engine, PlannedAllocator& alloc) const override {
    const Offload offload = offload_in(engine.homes());
    if (engine.reduce_dtype() == DType::F32)
      return make_parts<bf16, float>(offload, settings_.make_store, engine, alloc);
    return make_parts<bf16, bf16>(offload, settings_.make_store, engine, alloc);
  }
#endif

 private:
  OffloadSettings settings_;
  const HostStoreKind* store_;  // where a module keeps the optimizer state, else null
};

}  // namespace

std::shared_ptr<const StateTier> host_tier(const OffloadSettings& settings) {
  if (!settings.any()) return nullptr;
  return std::make_shared<HostTier>(settings);
}

}  // namespace zm
