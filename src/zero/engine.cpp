#include "zero/engine.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/stage_spec.hpp"
#include "model/layout.hpp"
#include "zero/schedule_execution.hpp"

namespace zm {

bool sums_gradients_in_fp32(const ZeroOptions& options) {
  const PrecisionPolicy& policy = options.policy;
  return policy.compute != Element::FP32 && (options.grad_accum > 1 || policy.widens_reduce());
}

bool ZeroEngine::cuts_finer(const Placement& finer, const Placement& coarser) {
  const auto& f = finer.sharded_dims();
  const auto& c = coarser.sharded_dims();
  return f.size() > c.size() && std::equal(c.begin(), c.end(), f.begin());
}

ZeroEngine::ZeroEngine(const StageSpec& spec, const Partition& partition, MeshComms& comms,
                       const ZeroOptions& options, MemoryLedger* ledger)
    : stage_(spec.stage),
      partition_(&partition),
      comms_(&comms),
      comm_(&comms.group()),
      options_(options),
      ledger_(ledger),
      world_rank_(comms.world().rank()),
      schedule_(build_step_schedule(spec, partition, options, comms.mesh())),
      params_storage_(comms.mesh().placements(spec).params),
      grads_storage_(comms.mesh().placements(spec).grads),
      optim_storage_(comms.mesh().placements(spec).optim),
      params_piece_(piece(params_storage_)),
      grads_piece_(piece(grads_storage_)),
      optim_piece_(piece(optim_storage_)) {
  ZM_ASSERT(partition.ranks() == comm_->size(), "partition for {} ranks, shard group of {}",
            partition.ranks(), comm_->size());
  const Placement shard = Placement::shard({kShardDim});
  owned_grads_ = cuts_finer(optim_storage_, shard) ? optim_storage_ : shard;
}

ZeroEngine::~ZeroEngine() = default;

// ---- ZeroEngineT<Real> ----

std::vector<BufferSpec> model_state_buffers(const Partition& partition, const ZeroOptions& options,
                                            const ModelPlacements& placements,
                                            const ZeroMesh& mesh) {
  const PrecisionPolicy& policy = options.policy;
  const StateHomes& homes = options.homes;
  const int real_bytes = element_bytes(policy.compute);
  auto elements = [&](const Placement& placement) {
    return partition.piece_total(pieces(mesh.mesh, placement));
  };
  std::vector<BufferSpec> specs = {
      {"params", homes.params, elements(placements.params), real_bytes},
      {"grads", homes.grads, elements(placements.grads), real_bytes}};
  if (sums_gradients_in_fp32(options))
    specs.push_back({"grad_sum", homes.grads, elements(placements.grads)});
  if (keeps_master(options))
    specs.push_back({"master", homes.optimizer, elements(placements.optim)});
  specs.push_back({"adam_m", homes.optimizer, elements(placements.optim)});
  specs.push_back({"adam_v", homes.optimizer, elements(placements.optim)});
  return specs;
}

bool keeps_master(const ZeroOptions& options) {
  return options.policy.mixed() ||
         on_device(options.homes.optimizer) != on_device(options.homes.params);
}

template <typename Real>
ZeroEngineT<Real>::ZeroEngineT(const StageSpec& spec, const Partition& partition, MeshComms& comms,
                               const ZeroOptions& options, kernels::TeamShape team_shape,
                               MemoryLedger* ledger)
    : ZeroEngine(spec, partition, comms, options, ledger),
      reduces_in_fp32_(options.policy.widens_reduce()),
      team_shape_(team_shape) {
  allocate_model_state();
  prepare_strategies(spec);
  make_tier_parts(spec);
}

template <typename Real>
void ZeroEngineT<Real>::make_tier_parts(const StageSpec& spec) {
  TierParts<Real> parts;
  if (options_.tier) {
    const ScheduleContext context = schedule_context(spec, *partition_, options_, comms_->mesh());
    PlannedAllocator alloc(options_.tier->buffers(spec, context), ledger_);
    parts = options_.tier->parts(*this, alloc);
    alloc.finish();
  }
  optimizer_ = parts.optimizer ? std::move(parts.optimizer) : device_adamw<Real>();
  shard_home_ = parts.gradients ? std::move(parts.gradients) : device_shard_home<Real>();
  shard_source_ = parts.parameters ? std::move(parts.parameters) : resident_shard<Real>();
}

template <typename Real>
void ZeroEngineT<Real>::prepare_strategies(const StageSpec& spec) {
  PlannedAllocator alloc(schedule_.strategy_buffers(), ledger_);
  const ScheduleContext context = schedule_context(spec, *partition_, options_, comms_->mesh());
  for (CollectiveStrategy* strategy : schedule_.strategies())
    strategy->prepare(alloc, context, world_rank_);
  alloc.finish();
}

template <typename Real>
void ZeroEngineT<Real>::allocate_model_state() {
  const ModelPlacements placements{params_storage_, grads_storage_, optim_storage_};
  PlannedAllocator alloc(model_state_buffers(*partition_, options_, placements, comms_->mesh()),
                         ledger_);
  params_ = alloc.take<Real>("params");
  grads_ = alloc.take<Real>("grads");
  if (sums_gradients_in_fp32(options_)) grad_sum_ = alloc.take<float>("grad_sum");
  if (alloc.has("master")) master_ = alloc.take<float>("master");
  adam_m_ = alloc.take<float>("adam_m");
  adam_v_ = alloc.take<float>("adam_v");
  alloc.finish();
}

template <typename Real>
float* ZeroEngineT<Real>::master_at(int u, int64_t e) const {
  if (has_master()) return base_of(master_.data(), optim_piece_, u, e);
  if constexpr (!std::is_same_v<Real, float>) {
    ZM_ASSERT(false, "a bf16 engine without its fp32 master");
    return nullptr;
  } else {
    return param_at(u, e);
  }
}

template <typename Real>
void ZeroEngineT<Real>::begin_micro_step(int64_t micro, int64_t micro_steps, bool) {
  micro_ = micro;
  micro_steps_ = micro_steps;
  // Full gradient buffers accumulate over the micro-steps of a step.
  if (micro == 0 && grads_storage_.replicated())
    kernels::fill(team_shape_, grads_.data(), static_cast<int64_t>(grads_.size()), Real(0));
}

template <typename Real>
void ZeroEngineT<Real>::fold_full_gradients(int u) {
  if (!sums_micro_steps()) return;
  const int64_t n = partition_->unit(u).padded;
  Real* grads = grad_at(u, 0);
  // An fp32 reduction reduces the sum itself: nothing is rounded back.
  Real* rounded = last_micro() && !reduces_in_fp32_ ? grads : nullptr;
  kernels::accumulate_gradient(team_shape_, grad_sum_at(u, 0), grads, rounded, n, micro_ == 0);
  if (!last_micro())
    kernels::fill(team_shape_, grads, n, Real(0));  // the next micro-step adds into zeros
}

template <typename Real>
std::vector<double> ZeroEngineT<Real>::grad_sumsq_owned() const {
  const ParamLayout& layout = partition_->layout();
  std::vector<double> sums(static_cast<size_t>(layout.num_datasets()), 0.0);
  for (int u = 0; u < partition_->num_units(); ++u)
    for (const auto& [e, n] : norm_ranges(u))
      sums[static_cast<size_t>(layout.unit(u).dataset)] +=
          shard_home_->sum_of_squares(u, e, n, *this);
  // Every rank holding the same piece of summed gradients (every group its shard; sub-sharded,
  // each sub-shard is one rank's) counts it: the trainer's sum over all ranks counts each once.
  const int holders = comms_->mesh().data_parallel() / pieces(comms_->mesh().mesh, owned_grads_);
  for (double& sum : sums) sum /= holders;
  return sums;
}

// The owned gradients; of a model held in slices, the tensors every rank of the model-parallel
// group holds whole count on its first rank only, the slices on every rank. Of a model held in
// parts, the tied embedding a part holds for its head only counts where the part embeds (its
// gradient is the sum of both parts', model/layout.hpp).
template <typename Real>
std::vector<std::pair<int64_t, int64_t>> ZeroEngineT<Real>::norm_ranges(int u) const {
  const ParamLayout& layout = partition_->layout();
  if (layout.holds_copy(u)) return {};
  const auto [begin, end] = owned_gradients(u);
  if (end <= begin) return {};
  if (partition_->layout().slices() == 1) return {{begin, end - begin}};
  const bool counts_replicas = counts_held_alike(slice_rank());
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (const TensorSegment& seg : partition_->segments(u, begin, end))
    if (counts_replicas ||
        !held_whole(partition_->layout().tensors()[static_cast<size_t>(seg.tensor)]))
      ranges.emplace_back(seg.unit_offset, seg.length);
  return ranges;
}

namespace {

// AdamW on one segment, by compute type. fp32: the parameters are their own master.
void adamw_segment(kernels::TeamShape shape, float* master, const float* grads, float* m, float* v,
                   float* /*params*/, int64_t n, const kernels::AdamWParams& hp) {
  kernels::adamw_update(shape, master, grads, m, v, n, hp);
}
#if ZEROMINI_HAVE_BF16
// Grad: bf16, or float where the gradients were reduced in fp32.
template <typename Grad>
void adamw_segment(kernels::TeamShape shape, float* master, const Grad* grads, float* m, float* v,
                   bf16* params, int64_t n, const kernels::AdamWParams& hp) {
  kernels::adamw_update_mixed(shape, master, grads, m, v, params, n, hp);
}
#endif

// The core's optimizer: AdamW on the device over the state the rank holds there, segment by
// segment (weight decay on the matrices only).
template <typename Real>
class DeviceAdamW final : public UnitOptimizerT<Real> {
 public:
  void update(int u, const OptimizerSettings& s, ZeroEngineT<Real>& engine) override {
    const ParamLayout& layout = engine.partition().layout();
    const auto [begin, end] = engine.held_range(engine.optimizer_storage(), u);
    for (const TensorSegment& seg : engine.partition().segments(u, begin, end)) {
      const bool decay = layout.tensors()[static_cast<size_t>(seg.tensor)].decay;
      const kernels::AdamWParams hp{
          s.lr, s.beta1, s.beta2, s.eps, decay ? s.weight_decay : 0.0f, s.grad_scale, s.step};
      const int64_t e = seg.unit_offset;
      engine.with_reduced_grads(u, e, [&](const auto* grads) {
        adamw_segment(engine.team_shape(), engine.master_at(u, e), grads, engine.adam_m_at(u, e),
                      engine.adam_v_at(u, e), engine.param_at(u, e), seg.length, hp);
      });
    }
  }
};

}  // namespace

template <typename Real>
std::unique_ptr<UnitOptimizerT<Real>> device_adamw() {
  return std::make_unique<DeviceAdamW<Real>>();
}

template <typename Real>
void ZeroEngineT<Real>::optimizer_step(const OptimizerSettings& s) {
  optimizer_->begin(*this);
  for (int u = 0; u < partition_->num_units(); ++u) {
    optimizer_->update(u, s, *this);
    if (gathers_updates()) post_parameter_gather(u);
    poll();
  }
  wait_parameter_gathers();
}

template <typename Real>
void ZeroEngineT<Real>::masters_written() {
  // fp32 parameters are their own master; kept outside memory, the optimizer rounded them there.
  if (!has_master() || params_.category() == MemCategory::Storage) return;
  Kokkos::View<float*, MemSpace> copy;
  for (int u = 0; u < partition_->num_units(); ++u) {
    const auto [begin, end] = held_range(optim_storage_, u);
    if (end > begin)
      kernels::convert<float, Real>(team_shape_, param_at(u, begin), master_of(u, copy),
                                    end - begin);
    if (gathers_updates()) post_parameter_gather(u);
  }
  wait_parameter_gathers();
}

template <typename Real>
const float* ZeroEngineT<Real>::master_of(int u, Kokkos::View<float*, MemSpace>& copy) {
  const auto [begin, end] = held_range(optim_storage_, u);
  if (master_.data()) return master_at(u, begin);
  Kokkos::View<float*, HostSpace> host("master copy", end - begin);
  optimizer_->copy_state(0, u, begin, end - begin, host.data(), true, *this);
  Kokkos::resize(Kokkos::WithoutInitializing, copy, end - begin);
  Kokkos::deep_copy(copy, host);
  return copy.data();
}

template <typename Real>
void ZeroEngineT<Real>::wait_all(std::vector<CommRequest>& requests) {
  for (CommRequest& request : requests) request.wait();
  requests.clear();
}

template <typename Real>
void ZeroEngineT<Real>::post_parameter_gather(int u) {
  const ScheduledCollective& gather = schedule_.of(u, ScheduleRole::UpdateGather);
  // The updated piece (the optimizer's) into the whole the parameters' placement holds: the
  // full unit (stages 1-2), or with secondary shards this rank's group shard.
  // Where the pieces lie in the padded unit: a piece of padding only has an empty logical range
  // at the unit's end, but its slot is where the in-place gather expects it.
  const auto slot = [&](const Placement& placement) {
    const Piece p = piece(placement);
    return p.index * (partition_->unit(u).padded / p.count);
  };
  Real* whole = param_at(u, slot(params_storage_));
  Real* updated = param_at(u, slot(optim_storage_));
  parameter_gathers_.push_back(post_scheduled(gather, *this, {updated, whole}));
  if (gather.blocking()) parameter_gathers_.back().wait(true);
}

template <typename Real>
void ZeroEngineT<Real>::post_replica_reduction(int u) {
  const ScheduledCollective* reduction = schedule_.find(u, ScheduleRole::ReplicaReduction);
  if (!reduction) return;
  // The group's sum of this rank's shard, summed over the replicas in place; with secondary shards
  // only the sub-shard this rank owns receives the sum.
  void* shard = reduced_grad_at(u, comm_->rank() * partition_->unit(u).shard);
  void* owned = reduced_grad_at(u, owned_gradients(u).first);
  replica_reductions_.push_back(post_scheduled(*reduction, *this, {shard, owned}));
  if (reduction->blocking()) replica_reductions_.back().wait(true);
}

template <typename Real>
void ZeroEngineT<Real>::wait_parameter_gathers() {
  wait_all(parameter_gathers_);
  finish_scheduled(ScheduleRole::UpdateGather, *this);
}

#define ZM_INSTANTIATE(R)        \
  template class ZeroEngineT<R>; \
  template std::unique_ptr<UnitOptimizerT<R>> device_adamw();
ZM_FOR_EACH_REAL(ZM_INSTANTIATE)
#undef ZM_INSTANTIATE

}  // namespace zm
