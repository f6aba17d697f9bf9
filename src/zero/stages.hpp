// The four ZeRO stages as strategies over ZeroEngine. See engine.hpp for what each holds.
#pragma once

#include <map>
#include <vector>

#include "zero/engine.hpp"

namespace zm {

// The collectives each stage posts in one optimizer step on every rank, written beside the hooks
// that post them (stageN.cpp); ZeroEngine::traffic_plan picks the stage's.
using PlannedCollectives = std::vector<ZeroEngine::PlannedCollective>;
PlannedCollectives stage0_traffic(const PartitionPlan& plan, const Deck& deck);
PlannedCollectives stage1_traffic(const PartitionPlan& plan, const Deck& deck);
PlannedCollectives stage2_traffic(const PartitionPlan& plan, const Deck& deck);
PlannedCollectives stage3_traffic(const PartitionPlan& plan, const Deck& deck);
// Stages 1-3: for every unit, `reductions` reduce-scatters and `gathers` all-gathers of the padded
// unit in the deck's compute type.
PlannedCollectives per_unit_traffic(const PartitionPlan& plan, const Deck& deck, int64_t reductions,
                                    int64_t gathers);

template <typename Real>
class Stage0 : public ZeroEngineT<Real> {
  // Members of the dependent base this stage uses.
  using Base = ZeroEngineT<Real>;
  using Base::comm_;
  using Base::deck_;
  using Base::grad_at;
  using Base::last_micro;
  using Base::param_at;
  using Base::plan_;

 public:
  Stage0(const PartitionPlan& plan, Communicator& comm, const Deck& deck);
  static std::vector<BufferSpec> plan_buffers(const PartitionPlan& plan, const Deck& deck);
  // Buckets as (first element, element count) ranges of the padded gradient buffer, in the
  // order backward completes them.
  static std::vector<std::pair<int64_t, int64_t>> bucket_ranges(const PartitionPlan& plan,
                                                                const Deck& deck);

  const Real* acquire(UnitEvent event) override;
  void release(UnitEvent) override {}
  Real* grads(int unit) override;
  void grads_ready(int unit) override;
  void finish_backward() override;

 private:
  struct Bucket {
    int lo, hi;  // units [lo, hi], contiguous in the padded buffer
  };
  std::vector<Bucket> buckets_;
  std::vector<CommRequest> in_flight_;
};

template <typename Real>
class Stage1 : public ZeroEngineT<Real> {
  // Members of the dependent base this stage uses.
  using Base = ZeroEngineT<Real>;
  using Base::comm_;
  using Base::deck_;
  using Base::grad_at;
  using Base::last_micro;
  using Base::param_at;
  using Base::plan_;
  using Base::post_parameter_gather;
  using Base::rank_;
  using Base::wait_parameter_gathers;

 public:
  Stage1(const PartitionPlan& plan, Communicator& comm, const Deck& deck);
  static std::vector<BufferSpec> plan_buffers(const PartitionPlan& plan, const Deck& deck);

  const Real* acquire(UnitEvent event) override;
  void release(UnitEvent) override {}
  Real* grads(int unit) override;
  void grads_ready(int unit) override;
  void finish_backward() override;

 protected:
  void after_unit_update(int u) override { post_parameter_gather(u); }
  void after_optimizer() override { wait_parameter_gathers(); }

 private:
  std::vector<CommRequest> in_flight_;
};

// Gradients of stages 2 and 3: each unit's gradients accumulate in a full-size bucket during its
// backward, then are reduce-scattered into this rank's gradient shard, and the bucket is reused.
// The embedding unit has its own bucket (its wte gradient starts in the LM head, at the start of
// backward, and ends in the embedding backward, at the end); the other units rotate through one
// bucket, or two when overlap is on (one being reduced while the next fills).
template <typename Real>
class ShardedGradients {
 public:
  static void add_to_plan(std::vector<BufferSpec>& plan, const PartitionPlan& partition,
                          const Deck& deck);
  // Allocates exactly the buffers add_to_plan lists.
  void allocate(const PartitionPlan& partition, const Deck& deck);

  Real* bucket_for(int unit, ZeroEngineT<Real>& engine);
  void unit_ready(int unit, ZeroEngineT<Real>& engine, bool first_micro_step, bool overlap);
  void finish(ZeroEngineT<Real>& engine);

 private:
  struct InFlight {
    CommRequest request;
    int unit = -1;
    int bucket = -1;
    Real* accumulate_from = nullptr;  // temp to add into the shard after completion, if any
  };
  void complete(InFlight& op, ZeroEngineT<Real>& engine);
  void wait_bucket(int bucket, ZeroEngineT<Real>& engine);

  std::vector<TrackedBuffer<Real>> buckets_;  // [0] embedding unit, [1..] the rest
  std::vector<TrackedBuffer<Real>> recv_;     // per bucket, for grad_accum > 1
  std::map<int, int> bucket_of_unit_;
  int next_block_bucket_ = 0;
  std::vector<InFlight> in_flight_;
  bool accumulate_ = false;
};

template <typename Real>
class Stage2 : public ZeroEngineT<Real> {
  // Members of the dependent base this stage uses.
  using Base = ZeroEngineT<Real>;
  using Base::deck_;
  using Base::micro_;
  using Base::param_at;
  using Base::post_parameter_gather;
  using Base::wait_parameter_gathers;

 public:
  Stage2(const PartitionPlan& plan, Communicator& comm, const Deck& deck);
  static std::vector<BufferSpec> plan_buffers(const PartitionPlan& plan, const Deck& deck);

  const Real* acquire(UnitEvent event) override;
  void release(UnitEvent) override {}
  Real* grads(int unit) override;
  void grads_ready(int unit) override;
  void finish_backward() override;

 protected:
  void after_unit_update(int u) override { post_parameter_gather(u); }
  void after_optimizer() override { wait_parameter_gathers(); }

 private:
  ShardedGradients<Real> gradients_;
};

template <typename Real>
class Stage3 : public ZeroEngineT<Real> {
  // Members of the dependent base this stage uses.
  using Base = ZeroEngineT<Real>;
  using Base::comm_;
  using Base::deck_;
  using Base::micro_;
  using Base::param_at;
  using Base::plan_;
  using Base::rank_;

 public:
  Stage3(const PartitionPlan& plan, Communicator& comm, const Deck& deck,
         const std::vector<UnitEvent>& schedule);
  ~Stage3() override;
  static std::vector<BufferSpec> plan_buffers(const PartitionPlan& plan, const Deck& deck);
  static std::vector<BufferSpec> slot_plan(const PartitionPlan& plan, const Deck& deck);

  const Real* acquire(UnitEvent event) override;
  void release(UnitEvent event) override;
  Real* grads(int unit) override;
  void grads_ready(int unit) override;
  void begin_micro_step(int64_t micro, int64_t micro_steps) override;
  void finish_backward() override;

 private:
  // Gathered units: the embedding unit has its own slot; the others share 1 + prefetch slots.
  struct Slot {
    TrackedBuffer<Real> buffer;
    int event = -1;  // index into schedule_ of the event using it, -1 when free
    CommRequest gather;
  };
  int slot_kind(int event) const;  // 0 embedding slot, 1 other slots
  void post_gathers();             // posts gathers for the next events while slots are free
  int find_slot(int event) const;

  ShardedGradients<Real> gradients_;
  std::vector<UnitEvent> schedule_;
  std::vector<Slot> slots_;  // [0] embedding, [1..] others
  int next_event_ = 0;       // next schedule_ entry acquire() expects
  int next_gather_ = 0;      // next schedule_ entry without a posted gather
  int prefetch_ = 0;
};

}  // namespace zm
