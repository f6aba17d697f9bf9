// The four ZeRO stages as strategies over ZeroEngineT. See engine.hpp for what each holds; each
// stage overrides only the hooks where it differs from the resident defaults of ZeroEngineT.
// A stage's storage kinds, buffers and traffic are declared beside its hooks (stageN.cpp).
#pragma once

#include <map>
#include <vector>

#include "zero/engine.hpp"
#include "zero/unit_buffer_set.hpp"

namespace zm {

// What each stage allocates and posts in one optimizer step on every rank, for the planner
// (ZeroEngine::buffer_plan and traffic_plan pick the stage's).
using PlannedCollectives = std::vector<ZeroEngine::PlannedCollective>;
std::vector<BufferSpec> stage0_buffers(const PartitionPlan& plan, const Deck& deck,
                                       const ZeroMesh& mesh);
std::vector<BufferSpec> stage1_buffers(const PartitionPlan& plan, const Deck& deck,
                                       const ZeroMesh& mesh);
std::vector<BufferSpec> stage2_buffers(const PartitionPlan& plan, const Deck& deck,
                                       const ZeroMesh& mesh);
std::vector<BufferSpec> stage3_buffers(const PartitionPlan& plan, const Deck& deck,
                                       const ZeroMesh& mesh);
PlannedCollectives stage0_traffic(const PartitionPlan& plan, const Deck& deck);
PlannedCollectives stage1_traffic(const PartitionPlan& plan, const Deck& deck,
                                  const ZeroMesh& mesh);
PlannedCollectives stage2_traffic(const PartitionPlan& plan, const Deck& deck,
                                  const ZeroMesh& mesh);
PlannedCollectives stage3_traffic(const PartitionPlan& plan, const Deck& deck,
                                  const ZeroMesh& mesh);
// Stages 1-3: for every unit, `reductions` reduce-scatters and `gathers` all-gathers of the padded
// unit in the deck's compute type within the shard group and, under hybrid sharding, one
// all-reduce of the unit's shard across the groups.
PlannedCollectives per_unit_traffic(const PartitionPlan& plan, const Deck& deck,
                                    const ZeroMesh& mesh, int64_t reductions, int64_t gathers);
// Stage 0's gradient buckets as (first element, element count) ranges of the padded gradient
// buffer, in the order backward completes them.
std::vector<std::pair<int64_t, int64_t>> stage0_bucket_ranges(const PartitionPlan& plan,
                                                              const Deck& deck);

template <typename Real>
class Stage0 : public ZeroEngineT<Real> {
 public:
  Stage0(const PartitionPlan& plan, MeshComms& comms, const Deck& deck, MemoryLedger* ledger);

  Real* grads(int unit) override { return this->grad_at(unit, 0); }
  void grads_ready(int unit) override;
  void finish_backward() override { this->wait_all(in_flight_); }

 private:
  struct Bucket {
    int lo, hi;  // units [lo, hi], contiguous in the padded buffer
  };
  std::vector<Bucket> buckets_;
  std::vector<CommRequest> in_flight_;
};

template <typename Real>
class Stage1 : public ZeroEngineT<Real> {
 public:
  Stage1(const PartitionPlan& plan, MeshComms& comms, const Deck& deck, MemoryLedger* ledger);

  Real* grads(int unit) override { return this->grad_at(unit, 0); }
  void grads_ready(int unit) override;
  void finish_backward() override;

 private:
  void finish_reductions();  // waits for the in-flight reduce-scatters in posting order
  struct InFlight {
    int unit;
    CommRequest request;
  };
  std::vector<InFlight> in_flight_;
};

// Gradients of stages 2 and 3: each unit's gradients accumulate in a full-size bucket during its
// backward, then are reduce-scattered into this rank's gradient shard, and the bucket is reused.
// The embedding unit has its own bucket (its wte gradient starts in the LM head, at the start of
// backward, and ends in the embedding backward, at the end); the other units rotate through one
// bucket, or two when overlap is on (one being reduced while the next fills).
// The gradient buckets and, under gradient accumulation, the shard-sized receive buffers beside
// them; sharded_gradient_buffers lists both for the planner. Under an fp32 reduction of bf16
// gradients (PrecisionPolicy::widens_reduce) each bucket is converted into an fp32 bucket beside
// it, which is reduce-scattered into the fp32 sum's shard, and the receive buffers are fp32.
UnitBufferSet gradient_bucket_set(const PartitionPlan& partition, const Deck& deck);
UnitBufferSet gradient_wide_bucket_set(const PartitionPlan& partition, const Deck& deck);
UnitBufferSet gradient_receive_set(const PartitionPlan& partition, const Deck& deck);
std::vector<BufferSpec> sharded_gradient_buffers(const PartitionPlan& partition, const Deck& deck);

template <typename Real>
class ShardedGradients {
 public:
  // Allocates the sets of sharded_gradient_buffers.
  void allocate(const PartitionPlan& partition, const Deck& deck, MemoryLedger* ledger);

  Real* bucket_for(int unit, ZeroEngineT<Real>& engine);
  void unit_ready(int unit, ZeroEngineT<Real>& engine, bool first_micro_step, bool last_micro_step,
                  bool overlap);
  void finish(ZeroEngineT<Real>& engine);

 private:
  struct InFlight {
    CommRequest request;
    int unit = -1;
    int bucket = -1;
    Real* accumulate_from = nullptr;   // temp to add into the shard after completion, if any
    float* accumulate_wide = nullptr;  // the same under the fp32 reduction
    bool last_micro = false;           // the shard is then complete in the group
  };
  // Posts unit u's reduce-scatter in fp32 from its bucket's fp32 copy into the fp32 sum.
  CommRequest post_wide(InFlight& op, int64_t shard, bool first_micro_step,
                        ZeroEngineT<Real>& engine);
  void complete(InFlight& op, ZeroEngineT<Real>& engine);
  void wait_bucket(int bucket, ZeroEngineT<Real>& engine);

  std::vector<TrackedBuffer<Real>> buckets_;     // [0] embedding unit, [1..] the rest
  std::vector<TrackedBuffer<Real>> recv_;        // per bucket, for grad_accum > 1
  std::vector<TrackedBuffer<float>> wide_;       // fp32 reduction: the buckets' fp32 copies
  std::vector<TrackedBuffer<float>> recv_wide_;  // fp32 reduction: recv_ in fp32
  bool wide_reduce_ = false;
  std::map<int, int> bucket_of_unit_;
  int next_block_bucket_ = 0;
  std::vector<InFlight> in_flight_;
  bool accumulate_ = false;
};

template <typename Real>
class Stage2 : public ZeroEngineT<Real> {
 public:
  Stage2(const PartitionPlan& plan, MeshComms& comms, const Deck& deck, MemoryLedger* ledger);

  Real* grads(int unit) override { return gradients_.bucket_for(unit, *this); }
  void grads_ready(int unit) override;
  void finish_backward() override { gradients_.finish(*this); }

 private:
  ShardedGradients<Real> gradients_;
};

// Stage 3's gathered units: the embedding unit has its own slot; the others share 1 + prefetch.
UnitBufferSet gather_slot_set(const PartitionPlan& plan, const Deck& deck);

template <typename Real>
class Stage3 : public ZeroEngineT<Real> {
 public:
  Stage3(const PartitionPlan& plan, MeshComms& comms, const Deck& deck,
         const std::vector<UnitEvent>& schedule, MemoryLedger* ledger);
  ~Stage3() override;

  const Real* acquire(UnitEvent event) override;
  void release(UnitEvent event) override;
  Real* grads(int unit) override { return gradients_.bucket_for(unit, *this); }
  void grads_ready(int unit) override;
  void begin_micro_step(int64_t micro, int64_t micro_steps) override;
  void finish_backward() override { gradients_.finish(*this); }

 private:
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
