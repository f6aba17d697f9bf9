#include "modules/zeropp/strategies.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "modules/zeropp/cross_node.hpp"
#include "modules/zeropp/int8_gather.hpp"
#include "modules/zeropp/quantized_gradients.hpp"
#include "zero/schedule.hpp"
#include "zero/unit_buffer_set.hpp"

namespace zm {

namespace {

// Calls f with a null pointer of the C++ type `held` stands for.
template <typename F>
void with_type(DType held, F&& f) {
  if (held == DType::F32) return f(static_cast<float*>(nullptr));
#if ZEROMINI_HAVE_BF16
  if (held == DType::BF16) return f(static_cast<bf16*>(nullptr));
#endif
  ZM_ASSERT(false, "a quantized collective of {} data", dtype_name(held));
}

// qgZ: the gradient reductions within the shard group and across the groups, sharing one state.
class QuantizedReduction final : public CollectiveStrategy {
 public:
  QuantizedReduction(const ZeroppOptions& options, bool by_node)
      : options_(options), by_node_(by_node) {}

  std::string name(const ScheduledCollective& entry) const override {
    if (entry.role == ScheduleRole::ReplicaReduction) return "quantized_exchange";
    return by_node_ ? "quantized_all_to_all_by_node" : "quantized_all_to_all";
  }
  bool takes(const ScheduledCollective& entry, const ScheduleContext&) const override {
    return entry.role == ScheduleRole::GroupReduction ||
           entry.role == ScheduleRole::ReplicaReduction;
  }
  void describe(ScheduledCollective& entry, const ScheduleContext& context) const override {
    const UnitPartition& p = context.partition.unit(entry.unit);
    if (entry.role == ScheduleRole::ReplicaReduction) {
      entry.elements = context.mesh.sub_sharded() ? p.sub_shard : p.shard;
      entry.waited = StepPoint::Posted;
      entry.hops = {{grad_exchange_across(options_, p, context.replicas, context.mesh.sub_sharded(),
                                          context.across),
                     MeshGroup::Replicate}};
      return;
    }
    // The exchange itself blocks (the sum needs the segments); stage 1 (reducing once, on the
    // last micro-step) goes on across the groups at once, stages 2-3 when the bucket is taken
    // again, as unquantized.
    if (entry.posted == StepPoint::LastBackward) entry.waited = StepPoint::Posted;
    const PlannedCollectives hops = grad_exchange_in_group(
        options_, p, context.group_ranks, shard_group_span(context.mesh), context.in_group);
    if (hops.size() == 1)
      entry.hops = {{hops[0], MeshGroup::Shard}};
    else
      entry.hops = {{hops[0], MeshGroup::Added, kShardWithinNode},
                    {hops[1], MeshGroup::Added, kShardAcrossNodes}};
  }
  std::vector<BufferSpec> buffers(const ScheduleContext& context) const override {
    return quantized_gradient_buffers(context.partition, options_, context.mesh);
  }
  void prepare(PlannedAllocator& alloc, const ScheduleContext& context, int world_rank) override {
    state_ = std::make_unique<QuantizedGradients>(context.partition, options_, alloc, world_rank);
  }
  CommRequest post(const ScheduledCollective& c, const ScheduledBuffers& b,
                   PostContext& context) override {
    with_type(context.held, [&](auto* type) {
      using T = std::remove_pointer_t<decltype(type)>;
      auto* in = static_cast<T*>(b.in);
      if (c.role == ScheduleRole::ReplicaReduction)  // in place in the shard
        state_->reduce_across(c, context.comms, in, context.team);
      else if (c.hops.size() == 1)
        state_->reduce_in_group(c, context.comms, in, static_cast<T*>(b.out), context.team);
      else
        state_->reduce_in_group_by_node(c, context.comms, in, static_cast<T*>(b.out), context.team);
    });
    return {};
  }

 private:
  ZeroppOptions options_;
  bool by_node_;
  std::unique_ptr<QuantizedGradients> state_;
};

// qwZ: stage 3's gathers of a unit's shards as int8 segments, one packed buffer per parameter
// slot (the segments of the gather the slot holds).
class Int8UnitGather final : public CollectiveStrategy {
 public:
  explicit Int8UnitGather(const ZeroppOptions& options) : options_(options) {}

  std::string name(const ScheduledCollective&) const override { return "int8_all_gather"; }
  bool takes(const ScheduledCollective& entry, const ScheduleContext&) const override {
    return entry.role == ScheduleRole::UnitGather;
  }
  void describe(ScheduledCollective& entry, const ScheduleContext& context) const override {
    const UnitPartition& p = context.partition.unit(entry.unit);
    entry.hops = {{planned_int8_gather(p.shard, options_.quantize_block, context.group_ranks,
                                       context.param_bytes, context.in_group),
                   MeshGroup::Shard}};
  }
  std::vector<BufferSpec> buffers(const ScheduleContext& context) const override {
    std::vector<BufferSpec> out;
    packed_slots(context).add_to(out);
    return out;
  }
  void prepare(PlannedAllocator& alloc, const ScheduleContext& context, int) override {
    packed_ = packed_slots(context).take<uint8_t>(alloc);
  }
  CommRequest post(const ScheduledCollective& c, const ScheduledBuffers& b,
                   PostContext& context) override {
    CommRequest request;
    with_type(context.held, [&](auto* type) {
      using T = std::remove_pointer_t<decltype(type)>;
      request = post_int8_gather(c, context.comms, context.team, static_cast<const T*>(b.in),
                                 c.elements, options_.quantize_block, packed(b.slot));
    });
    return request;
  }
  // Every rank's segment, its own included, dequantized into the slot: all ranks compute with the
  // same values, and the shard itself (and the fp32 master) is never touched.
  void arrived(const ScheduledCollective& c, const ScheduledBuffers& b,
               PostContext& context) override {
    with_type(context.held, [&](auto* type) {
      using T = std::remove_pointer_t<decltype(type)>;
      unpack_int8_gather(context.team, packed(b.slot), c.hops.front().wire.ranks, c.elements,
                         options_.quantize_block, static_cast<T*>(b.out));
    });
  }

 private:
  // The slots' packed buffers (bytes): every rank's segment of the unit, end to end.
  UnitBufferSet packed_slots(const ScheduleContext& context) const {
    const Partition& partition = context.partition;
    auto bytes = [&](int u) {
      return partition.ranks() *
             int8_segment(partition.unit(u).shard, options_.quantize_block).bytes();
    };
    UnitBufferSet packed;
    packed.prefix = "gathered_int8";
    packed.embed_elements = bytes(0);
    for (int u = 1; u < partition.num_units(); ++u)
      packed.shared_elements = std::max(packed.shared_elements, bytes(u));
    packed.shared = context.gather_slots - 1;
    packed.element_bytes = 1;
    return packed;
  }
  uint8_t* packed(int slot) { return packed_[static_cast<size_t>(slot)].data(); }

  ZeroppOptions options_;
  std::vector<TrackedBuffer<uint8_t>> packed_;  // per slot: [0] the embedding unit's
};

// qwZ with secondary shards under mixed precision: after the optimizer updated unit u's sub-shard
// of the compute copy, each rank quantizes it, all-gathers the packed segments across the replicas
// and dequantizes every segment, its own included, into its group shard, so that every replica
// holds bitwise the same parameters. Under fp32 the group shard's own sub-shard is the master
// itself, so that gather stays unquantized. With overlap the next unit's update runs while a
// gather is in flight, in two packed buffers used in turn (a unit's gather completes, and is
// dequantized, before its buffer takes the unit after the next); without, one buffer, and each
// gather blocks and is dequantized at once.
class Int8ReplicaGather final : public CollectiveStrategy {
 public:
  explicit Int8ReplicaGather(const ZeroppOptions& options) : options_(options) {}
  ~Int8ReplicaGather() override {
    for (InFlight& gather : in_flight_) gather.request = CommRequest();  // before the buffers
  }

  std::string name(const ScheduledCollective&) const override { return "int8_all_gather"; }
  bool takes(const ScheduledCollective& entry, const ScheduleContext& context) const override {
    return entry.role == ScheduleRole::UpdateGather && context.mesh.sub_sharded();
  }
  void describe(ScheduledCollective& entry, const ScheduleContext& context) const override {
    const UnitPartition& p = context.partition.unit(entry.unit);
    entry.elements = p.sub_shard;
    entry.hops = {{planned_int8_gather(p.sub_shard, options_.quantize_block, context.replicas,
                                       context.param_bytes, context.across),
                   MeshGroup::Replicate}};
  }
  std::vector<BufferSpec> buffers(const ScheduleContext& context) const override {
    int64_t largest = 0;
    for (int u = 0; u < context.partition.num_units(); ++u)
      largest = std::max(
          largest,
          int8_segment(context.partition.unit(u).sub_shard, options_.quantize_block).bytes());
    std::vector<BufferSpec> out;
    for (int i = 0; i < (options_.overlap ? 2 : 1); ++i)
      out.push_back({fmt::format("replica_gather_int8.{}", i), MemCategory::CommBuffers,
                     context.partition.sub_shards() * largest, 1});
    return out;
  }
  void prepare(PlannedAllocator& alloc, const ScheduleContext& context, int) override {
    partition_ = &context.partition;
    for (const BufferSpec& spec : buffers(context))
      packed_.push_back(alloc.take<uint8_t>(spec.name));
    in_flight_.resize(packed_.size());
  }
  // Quantizes this replica's updated sub-shard (b.in) of the group shard (b.out) and posts its
  // gather; where the entry blocks, completes it. The request stays here (finish).
  CommRequest post(const ScheduledCollective& c, const ScheduledBuffers& b,
                   PostContext& context) override {
    InFlight& gather = in_flight_[next_];
    if (gather.unit >= 0) complete(gather, false, context);  // its buffer is needed again
    with_type(context.held, [&](auto* type) {
      using T = std::remove_pointer_t<decltype(type)>;
      gather.request = post_int8_gather(c, context.comms, context.team, static_cast<const T*>(b.in),
                                        c.elements, options_.quantize_block, packed_[next_].data());
    });
    gather.unit = c.unit;
    gather.shard = b.out;
    gather.replicas = c.hops.front().wire.ranks;
    if (c.blocking()) complete(gather, true, context);
    next_ = (next_ + 1) % in_flight_.size();
    return {};
  }
  // Completes every posted gather, in posting order (the buffer after next_ was taken first).
  void finish(PostContext& context) override {
    for (size_t i = 0; i < in_flight_.size(); ++i) {
      InFlight& gather = in_flight_[(next_ + i) % in_flight_.size()];
      if (gather.unit >= 0) complete(gather, false, context);
    }
  }

 private:
  struct InFlight {
    CommRequest request;
    int unit = -1;  // -1: the buffer is free
    void* shard = nullptr;
    int replicas = 1;
  };
  // Waits for the gather, then dequantizes every replica's segment into the group shard.
  void complete(InFlight& gather, bool blocking, PostContext& context) {
    gather.request.wait(blocking);
    const size_t buffer = static_cast<size_t>(&gather - in_flight_.data());
    with_type(context.held, [&](auto* type) {
      using T = std::remove_pointer_t<decltype(type)>;
      unpack_int8_gather(context.team, packed_[buffer].data(), gather.replicas,
                         partition_->unit(gather.unit).sub_shard, options_.quantize_block,
                         static_cast<T*>(gather.shard));
    });
    gather.unit = -1;
  }

  ZeroppOptions options_;
  const Partition* partition_ = nullptr;
  std::vector<TrackedBuffer<uint8_t>> packed_;
  std::vector<InFlight> in_flight_;  // one per packed buffer
  size_t next_ = 0;                  // the buffer the next gather takes
};

class ZeroppProvider final : public StrategyProvider {
 public:
  explicit ZeroppProvider(const ZeroppOptions& options) : options_(options) {}
  std::vector<std::shared_ptr<CollectiveStrategy>> strategies(
      const ScheduleContext& context) const override {
    ZeroppOptions options = options_;
    options.policy = context.options.policy;
    options.overlap = context.options.overlap;
    std::vector<std::shared_ptr<CollectiveStrategy>> out;
    if (options.quantize_grads)
      out.push_back(std::make_shared<QuantizedReduction>(
          options, hops_by_node(shard_group_span(context.mesh))));
    if (options.quantize_weights) {
      out.push_back(std::make_shared<Int8UnitGather>(options));
      if (options.policy.mixed()) out.push_back(std::make_shared<Int8ReplicaGather>(options));
    }
    return out;
  }
  // qgZ's exchange in two hops by node needs the shard group split by node.
  void prepare(MeshComms& comms) const override {
    if (options_.quantize_grads) split_group_by_node(comms);
  }

 private:
  ZeroppOptions options_;
};

}  // namespace

std::shared_ptr<const StrategyProvider> zeropp_strategies(const ZeroppOptions& options) {
  if (!options.any()) return nullptr;
  return std::make_shared<ZeroppProvider>(options);
}

}  // namespace zm
