// The ZeRO engine: where parameters, gradients and optimizer state live on a rank, and which
// collectives move them. The base class does what all stages share (storage addressing, the
// optimizer over held state, initialisation, the gradient norm); a stage's engine
// (ComposedEngine) composes the gradient and parameter paths its core/stage_spec.hpp record
// names (ARCHITECTURE.md, "Stages as data"), posting the entries of the step's schedule.
//
// Precision: parameters and gradients are stored, and moved, in the compute type Real, except
// that under train.reduce_precision = "fp32" the gradients are reduced in fp32 into grad_sum,
// which AdamW and the norm then read. Adam m and v are fp32; under bf16 the optimizer state also
// holds an fp32 master copy of the parameters, rounded into the bf16 parameters after each
// update: the ZeRO paper's 2 + 2 + 12 bytes per parameter.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/mesh_comms.hpp"
#include "core/device_mesh.hpp"
#include "core/memory.hpp"
#include "kernels/adamw.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/team_shape.hpp"
#include "model/unit_access.hpp"
#include "zero/partition.hpp"
#include "zero/schedule.hpp"
#include "zero/state_tier.hpp"
#include "zero/zero_options.hpp"

namespace zm {

struct OptimizerSettings {
  float lr = 0;
  float beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f;
  float weight_decay = 0;
  float grad_scale = 1;  // 1/(ranks * grad_accum) times the clipping factor
  int64_t step = 1;      // 1-based
};

// Whether the engine keeps the gradients' fp32 sum (grad_sum) beside the bf16 gradients: under
// bf16 with gradient accumulation, or with an fp32 reduction.
bool sums_gradients_in_fp32(const ZeroOptions& options);

// What every stage does whatever the compute type; the trainer, checkpoints and the planner see
// an engine through this class.
class ZeroEngine {
 public:
  // For the planner: every buffer the stage's engine allocates (element sizes from the options'
  // precision policy, so any build prices any precision), and the collectives one optimizer step
  // posts on each rank (the step schedule's; the trainer adds its statistics all-reduce).
  static std::vector<BufferSpec> declared_buffers(int stage, const Partition& partition,
                                                  const ZeroOptions& options, const ZeroMesh& mesh);
  static PlannedCollectives declared_traffic(int stage, const Partition& partition,
                                             const ZeroOptions& options, const ZeroMesh& mesh);

  virtual ~ZeroEngine();
  int stage() const { return stage_; }
  const StepSchedule& schedule() const { return schedule_; }
  const StateHomes& homes() const { return options_.homes; }
  const ZeroOptions& options() const { return options_; }
  const Partition& partition() const { return *partition_; }
  // The shard group's communicator: the engine's ranks, rank() its shard of every unit.
  Communicator& comm() const { return *comm_; }
  // All the run's communicators (the world, and the replicas under hybrid sharding).
  MeshComms& comms() const { return *comms_; }
  const ZeroMesh& mesh() const { return comms_->mesh(); }
  // This rank's place in its model-parallel group: which slice of each cut tensor its layout
  // holds.
  int slice_rank() const { return mesh().model_rank(world_rank_); }
  const Placement& param_storage() const { return params_storage_; }
  const Placement& optimizer_storage() const { return optim_storage_; }
  // This rank's piece of a unit under the optimizer's placement (the state it updates).
  const Piece& optimizer_piece() const { return optim_piece_; }
  // Where the fp32 master parameters live: the optimizer's placement under bf16, the parameters'
  // own under fp32.
  virtual const Placement& master_storage() const = 0;

  // Initialises the parameters this rank holds, GPT-2 style, from a counter-based RNG keyed by
  // (seed, logical parameter index): identical values at any rank count and stage.
  virtual void init_parameters(uint64_t seed) = 0;

  // Micro-step `micro` of `micro_steps` starts (zeroes gradients where needed). `forward_apart`:
  // its forward already ran, as a forward-only pass (a pipeline stage without the head runs a
  // micro-batch's forward and backward apart): its parameters are reached for the backward only.
  virtual void begin_micro_step(int64_t micro, int64_t micro_steps, bool forward_apart = false) = 0;
  // Waits for every gradient collective of the step (after the last backward).
  virtual void finish_backward() = 0;
  // Around each forward of a forward-only pass (between steps, GPT::forward with
  // ForwardPass::LossOnly): the parameters are reached as in a training forward (the schedule's
  // entries a forward reaches, ScheduledCollective::per_forward_only), and nothing of the
  // gradients or of the next step's schedule is touched.
  virtual void begin_forward_only() = 0;
  virtual void end_forward_only() = 0;
  // Sums of squares of the (summed, not yet averaged) gradients this rank owns, per dataset of the
  // whole model (UnitInfo::dataset), divided by the number of shard groups that hold them; each
  // summed over all ranks is its dataset's part of the squared norm, whatever the stage, shard
  // size or layout.
  virtual std::vector<double> grad_sumsq_owned() const = 0;
  // AdamW over the optimizer state this rank holds, then whatever re-distribution the stage
  // needs (stages 1 and 2 all-gather the updated shards).
  virtual void optimizer_step(const OptimizerSettings& settings) = 0;
  // Called with unit u's gradients (n elements of `dtype`) just before the step reduces them over
  // the data-parallel ranks: on the last micro-step at stages 0-1, on every one at stages 2-3. The
  // trainer adds the token embedding's held part there (model/held_token_grads.hpp); a module may
  // change them too (a model held in parts sums the tied embedding's two, calling the hook it
  // replaced where it needs it).
  using BeforeReduction = std::function<void(int unit, void* grads, int64_t n, DType dtype)>;
  void set_before_reduction(BeforeReduction hook) { before_reduction_ = std::move(hook); }
  const BeforeReduction& before_reduction_hook() const { return before_reduction_; }
  void before_reduction(int unit, void* grads, int64_t n, DType dtype) const {
    if (before_reduction_) before_reduction_(unit, grads, n, dtype);
  }

  // The held range of unit u (logical elements) under a placement: the whole unit when
  // replicated, else the logical elements of this rank's piece.
  std::pair<int64_t, int64_t> held_range(const Placement& placement, int u) const {
    return partition_->piece_range(u, piece(placement));
  }
  // The logical elements of unit u whose summed gradients this rank owns after backward: its
  // shard, or with a sub-sharded optimizer its sub-shard.
  std::pair<int64_t, int64_t> owned_gradients(int u) const { return held_range(owned_grads_, u); }
  // Pointers to logical element e of unit u (e inside the held range) of the fp32 state: master
  // parameters (held_range(master_storage())) and Adam m and v (held_range(optimizer_storage())).
  virtual float* master_at(int u, int64_t e) const = 0;
  float* adam_m_at(int u, int64_t e) const { return base_of(adam_m_.data(), optim_piece_, u, e); }
  float* adam_v_at(int u, int64_t e) const { return base_of(adam_v_.data(), optim_piece_, u, e); }
  // Elements [e, e + n) of that state (0: master, 1: Adam m, 2: Adam v) to host memory or from
  // it, wherever the optimizer keeps it (UnitOptimizerT::copy_state): checkpoints go through it.
  virtual void copy_state(int state, int u, int64_t e, int64_t n, float* host, bool to_host) = 0;
  // After master parameters were written from outside (a checkpoint): refreshes the compute
  // parameters from them (collective where the stage gathers parameters).
  virtual void masters_written() = 0;

 protected:
  // The model state of `spec` in its placements on the mesh (ZeroMesh::placements).
  ZeroEngine(const StageSpec& spec, const Partition& partition, MeshComms& comms,
             const ZeroOptions& options, MemoryLedger* ledger);
  // This rank's piece of a buffer under a placement.
  Piece piece(const Placement& placement) const {
    return piece_of(comms_->mesh().mesh, placement, world_rank_);
  }
  // Logical element e of unit u in a buffer holding `piece` of every unit (the concatenation of
  // its pieces of all units).
  template <typename T>
  T* base_of(T* buffer, const Piece& piece, int u, int64_t e) const {
    const UnitPartition& p = partition_->unit(u);
    return buffer + partition_->piece_offset(u, piece.count) +
           (e - piece.index * (p.padded / piece.count));
  }
  // Whether `finer` shards over every dimension `coarser` does and more: its pieces cut those of
  // `coarser` again.
  static bool cuts_finer(const Placement& finer, const Placement& coarser);

  int stage_;
  const Partition* partition_;
  MeshComms* comms_;
  Communicator* comm_;  // the shard group's (the world's with one group)
  ZeroOptions options_;
  MemoryLedger* ledger_;  // where the engine's buffers are recorded (the run's)
  int world_rank_;        // this rank in the mesh
  StepSchedule schedule_;
  Placement params_storage_, grads_storage_, optim_storage_;
  Piece params_piece_, grads_piece_, optim_piece_;  // this rank's, under those placements
  Placement owned_grads_;  // where the summed gradients this rank owns lie: the finer of shard
                           // and the optimizer's placement
  TrackedBuffer<float> adam_m_, adam_v_;
  int64_t micro_ = 0, micro_steps_ = 1;
  bool last_micro() const { return micro_ + 1 == micro_steps_; }
  BeforeReduction before_reduction_;
};

// The parameters, gradients, master copy (keeps_master), Adam m and v in a stage's placements,
// each in the memory category its home says (options.homes). Element sizes come from the options'
// policy (element_bytes(policy.compute)), not from a compute type, so that any build can price any
// precision; allocation checks that the two agree.
std::vector<BufferSpec> model_state_buffers(const Partition& partition, const ZeroOptions& options,
                                            const ModelPlacements& placements,
                                            const ZeroMesh& mesh);
// Whether the engine keeps an fp32 master apart from the parameters: under mixed precision, and
// where the optimizer state lives in another memory than the (fp32) parameters.
bool keeps_master(const ZeroOptions& options);

// The engine for compute type Real: the parameter and gradient buffers, and the UnitAccess the
// model runs on, whose parameter and gradient hooks ComposedEngine forwards to its paths.
template <typename Real>
class ZeroEngineT : public ZeroEngine, public UnitAccess<Real> {
 public:
  bool has_master() const { return master_.size() > 0; }
  const Placement& master_storage() const override {
    return has_master() ? optim_storage_ : params_storage_;
  }
  void init_parameters(uint64_t seed) override;
  void begin_micro_step(int64_t micro, int64_t micro_steps, bool forward_apart = false) override;
  std::vector<double> grad_sumsq_owned() const override;
  // The ranges [e, e + n) of unit u's reduced gradients this rank counts in the norm; the sum of
  // squares of one where it lies in memory (ShardHomeT::sum_of_squares).
  std::vector<std::pair<int64_t, int64_t>> norm_ranges(int u) const;
  double sum_of_squares_held(int u, int64_t e, int64_t n) const {
    return with_reduced_grads(
        u, e, [&](const auto* grads) { return kernels::sum_of_squares(team_shape_, grads, n); });
  }
  void optimizer_step(const OptimizerSettings& settings) override;
  float* master_at(int u, int64_t e) const override;
  void copy_state(int state, int u, int64_t e, int64_t n, float* host, bool to_host) override {
    optimizer_->copy_state(state, u, e, n, host, to_host, *this);
  }
  void masters_written() override;

  // Pointers to logical element e of unit u in the compute parameters and gradients.
  Real* param_at(int u, int64_t e) const { return base_of(params_.data(), params_piece_, u, e); }
  Real* grad_at(int u, int64_t e) const { return base_of(grads_.data(), grads_piece_, u, e); }
  // Mixed precision with gradient accumulation (train.grad_accum > 1): the micro-steps' gradients
  // are summed in fp32 (grad_sum_at, in the gradients' storage), and the bf16 gradients receive
  // the sum rounded once, on the last micro-step, where it is reduced. Each micro-step's gradient
  // is still computed, and reduced where a stage reduces it, in bf16. Under the fp32 reduction
  // the sum is also kept (whatever grad_accum), reduced in fp32 and never rounded back.
  bool sums_micro_steps() const { return grad_sum_.size() > 0; }
  float* grad_sum_at(int u, int64_t e) const {
    return base_of(grad_sum_.data(), grads_piece_, u, e);
  }
  // Stages 0 and 1 (full gradients), when unit u's gradients of a micro-step are complete: adds
  // them to the fp32 sum and zeroes them for the next micro-step, or on the last micro-step writes
  // the sum, rounded, in their place. Nothing unless sums_micro_steps().
  void fold_full_gradients(int u);
  // Calls f with a pointer to logical element e of unit u of the gradients the collectives reduce
  // and the optimizer and the norm read: the fp32 sum under the policy's fp32 reduction (float*),
  // else the gradients themselves (Real*). The one place the engine chooses between the two.
  template <typename F>
  decltype(auto) with_reduced_grads(int u, int64_t e, F&& f) const {
    if (reduces_in_fp32_) return f(grad_sum_at(u, e));
    return f(grad_at(u, e));
  }
  void* reduced_grad_at(int u, int64_t e) const {
    return with_reduced_grads(u, e, [](auto* grads) -> void* { return grads; });
  }
  DType reduce_dtype() const { return reduces_in_fp32_ ? DType::F32 : dtype_of<Real>(); }
  // The teams of the engine's kernels (the optimizer, gradient sums and norms, initialisation).
  kernels::TeamShape team_shape() const { return team_shape_; }
  // Where each micro-step's reduced gradient shard joins the shard, and where a gather reads this
  // rank's shard from: the core's, or a tier's (zero/state_tier.hpp).
  ShardHomeT<Real>& shard_home() const { return *shard_home_; }
  ShardSourceT<Real>& shard_source() const { return *shard_source_; }

  void poll() override { comms_->progress(); }

  // Hybrid sharding: once unit u's gradient shard holds its group's sum (after the last
  // micro-step), its scheduled ReplicaReduction (an all-reduce across the groups; with secondary
  // shards a reduce-scatter into the sub-shards; or another strategy's exchange), in the same
  // order on every rank; finish_replica_reductions waits for them all. Nothing with one group.
  void post_replica_reduction(int u);
  void finish_replica_reductions() { wait_all(replica_reductions_); }

 protected:
  ZeroEngineT(const StageSpec& spec, const Partition& partition, MeshComms& comms,
              const ZeroOptions& options, kernels::TeamShape team_shape, MemoryLedger* ledger);
  // Where parameters are held more widely than they are updated (stages 1 and 2: full, updated by
  // shard; a sub-sharded optimizer: group shard, updated by sub-shard), each rank all-gathers its
  // updated part of unit u in place once it is updated, overlapping the next unit's update;
  // wait_parameter_gathers waits for them all.
  bool gathers_updates() const { return cuts_finer(optim_storage_, params_storage_); }
  void post_parameter_gather(int u);
  void wait_parameter_gathers();
  // Waits for and forgets in-flight collectives.
  static void wait_all(std::vector<CommRequest>& requests);

  TrackedBuffer<Real> params_, grads_;
  TrackedBuffer<float> master_;    // mixed precision only
  TrackedBuffer<float> grad_sum_;  // sums_gradients_in_fp32 only
  bool reduces_in_fp32_;           // PrecisionPolicy::widens_reduce()
  kernels::TeamShape team_shape_;  // of every kernel the engine launches
  std::vector<CommRequest> parameter_gathers_;
  std::vector<CommRequest> replica_reductions_;
  std::unique_ptr<UnitOptimizerT<Real>> optimizer_;
  std::unique_ptr<ShardHomeT<Real>> shard_home_;
  std::unique_ptr<ShardSourceT<Real>> shard_source_;

 private:
  // Allocates model_state_buffers, then the buffers the schedule's strategies keep (the paths
  // allocate their own after).
  void allocate_model_state();
  void prepare_strategies(const StageSpec& spec);
  // The tier's parts (zero/state_tier.hpp), or the core's where it has none.
  void make_tier_parts(const StageSpec& spec);
  // Initialises the held range of every unit of a buffer of T with the given placement (of
  // `only_unit` alone, where given, in a buffer holding that unit's range alone).
  template <typename T>
  void init_held(T* buffer, const Placement& placement, uint64_t seed, int only_unit = -1) const;
  // Unit u's held master, or where the optimizer keeps it outside memory a copy of it in `copy`.
  const float* master_of(int u, Kokkos::View<float*, MemSpace>& copy);
};

// The core's parts (zero/state_tier.hpp): AdamW on the device (engine.cpp), the shard summed
// where it was received (paths/sharded_gradients.cpp), the shard gathered where it lies
// (paths/gathered_parameters.cpp).
template <typename Real>
std::unique_ptr<UnitOptimizerT<Real>> device_adamw();
template <typename Real>
std::unique_ptr<ShardHomeT<Real>> device_shard_home();
template <typename Real>
std::unique_ptr<ShardSourceT<Real>> resident_shard();

// The engine of ZeRO stage `stage` computing in Real over the shard group of `comms` (partition is
// over its ranks), composed from the stage's record (factory.cpp). `schedule` is the order in
// which the model uses the units in a step (a parameter path that gathers per unit prefetches
// along it). Its kernels run teams of `team_shape`; its buffers are recorded in `ledger` (none:
// untracked).
template <typename Real>
std::unique_ptr<ZeroEngineT<Real>> make_engine(int stage, const Partition& partition,
                                               MeshComms& comms, const ZeroOptions& options,
                                               const std::vector<UnitEvent>& unit_order,
                                               kernels::TeamShape team_shape,
                                               MemoryLedger* ledger = nullptr);

}  // namespace zm
