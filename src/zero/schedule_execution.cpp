#include "zero/schedule_execution.hpp"

#include "core/error.hpp"
#include "zero/engine.hpp"
#include "zero/int8_gather.hpp"
#include "zero/quantized_gradients.hpp"

namespace zm {

Communicator& communicator_of(const MeshComms& comms, MeshGroup group) {
  Communicator* comm = nullptr;
  switch (group) {
    case MeshGroup::Shard:
      comm = &comms.group();
      break;
    case MeshGroup::Replicate:
      comm = comms.replicas();
      break;
    case MeshGroup::ShardWithinNode:
      comm = comms.group_within_node();
      break;
    case MeshGroup::ShardAcrossNodes:
      comm = comms.group_across_nodes();
      break;
  }
  ZM_ASSERT(comm != nullptr, "the schedule names the {} communicator, which this mesh lacks",
            mesh_group_name(group));
  return *comm;
}

namespace {

// The quantized reductions in the engine's reduce type (fp32, or the compute type).
template <typename Real, typename Reduce>
void quantized_reduction(const ScheduledCollective& c, ZeroEngineT<Real>& engine,
                         const ScheduledBuffers& b) {
  ZM_ASSERT(b.qgz != nullptr, "a quantized reduction without qgZ's state");
  auto* in = static_cast<Reduce*>(b.in);
  auto* out = static_cast<Reduce*>(b.out);
  const MeshComms& comms = engine.comms();
  Communicator& first = communicator_of(comms, c.hops[0].group);
  switch (c.strategy) {
    case Strategy::QuantizedAllToAll:
      b.qgz->reduce_in_group(first, c.unit, in, out, engine.team_shape());
      return;
    case Strategy::QuantizedAllToAllByNode:
      b.qgz->reduce_in_group_by_node(first, communicator_of(comms, c.hops[1].group), c.unit, in,
                                     out, engine.team_shape());
      return;
    case Strategy::QuantizedExchange:  // in place in the shard; all-to-all of sub-shards: hpZ
      b.qgz->reduce_across(first, c.unit, in, c.hops[0].wire.op == CommOp::AllToAll,
                           engine.team_shape());
      return;
    default:
      ZM_ASSERT(false, "{} is not a quantized reduction", strategy_name(c.strategy));
  }
}

}  // namespace

template <typename Real>
CommRequest post_scheduled(const ScheduledCollective& c, ZeroEngineT<Real>& engine,
                           const ScheduledBuffers& b) {
  const PlannedCollective& wire = c.hops.front().wire;
  Communicator& comm = communicator_of(engine.comms(), c.hops.front().group);
  ZM_ASSERT(comm.size() == wire.ranks, "{} of unit {}: scheduled on {} ranks, posted on {}",
            schedule_role_name(c.role), c.unit, wire.ranks, comm.size());
  const bool gathers = c.role == ScheduleRole::UpdateGather || c.role == ScheduleRole::UnitGather;
  const CommTag tag{c.unit, gathers ? CommPurpose::ParamGather : CommPurpose::GradReduce};
  const DType held = gathers ? dtype_of<Real>() : engine.reduce_dtype();
  const auto elements = static_cast<size_t>(c.elements);
  switch (c.strategy) {
    case Strategy::AllReduce:
      ZM_ASSERT(wire_dtype(wire) == held && wire.count == c.elements, "all-reduce of unit {}",
                c.unit);
      return comm.iall_reduce_sum(b.out, elements, held, tag);
    case Strategy::ReduceScatter:
      ZM_ASSERT(wire_dtype(wire) == held && wire.count == c.elements * wire.ranks,
                "reduce-scatter of unit {}", c.unit);
      return comm.ireduce_scatter_sum(b.in, b.out, elements, held, tag);
    case Strategy::AllGather:
      ZM_ASSERT(wire_dtype(wire) == held && wire.count == c.elements * wire.ranks,
                "all-gather of unit {}", c.unit);
      return comm.iall_gather(b.in, b.out, elements, held, tag);
    case Strategy::Int8AllGather:
      ZM_ASSERT(
          b.packed != nullptr &&
              wire.count ==
                  wire.ranks * int8_segment(c.elements, engine.options().quantize_block).bytes(),
          "int8 gather of unit {}", c.unit);
      return post_int8_gather(comm, engine.team_shape(), static_cast<const Real*>(b.in), c.elements,
                              engine.options().quantize_block, b.packed, tag);
    case Strategy::QuantizedAllToAll:
    case Strategy::QuantizedAllToAllByNode:
    case Strategy::QuantizedExchange:
      if (held == DType::F32)
        quantized_reduction<Real, float>(c, engine, b);
      else
        quantized_reduction<Real, Real>(c, engine, b);
      return {};
  }
  return {};
}

template CommRequest post_scheduled(const ScheduledCollective&, ZeroEngineT<float>&,
                                    const ScheduledBuffers&);
#if ZEROMINI_HAVE_BF16
template CommRequest post_scheduled(const ScheduledCollective&, ZeroEngineT<bf16>&,
                                    const ScheduledBuffers&);
#endif

}  // namespace zm
