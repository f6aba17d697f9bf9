#include "zero/collective_strategy.hpp"

#include "core/error.hpp"
#include "zero/schedule.hpp"

namespace zm {

namespace {

// The core's strategies: the collective of the entry's one hop, as the schedule's builder wrote
// it, in place or from the contribution to the result.
class PlainCollective final : public CollectiveStrategy {
 public:
  explicit PlainCollective(CommOp op) : op_(op) {}
  std::string name(const ScheduledCollective&) const override { return comm_op_name(op_); }
  // The builder's entry is already this strategy's.
  void describe(ScheduledCollective&, const ScheduleContext&) const override {}
  CommRequest post(const ScheduledCollective& c, const ScheduledBuffers& b,
                   PostContext& context) override {
    const auto elements = static_cast<size_t>(c.elements);
    const void* send = op_ == CommOp::AllReduce ? b.out : b.in;
    return post_hop(c, c.hops.front(), op_, send, b.out, elements, context.held, context.comms);
  }

 private:
  CommOp op_;
};

}  // namespace

std::shared_ptr<CollectiveStrategy> plain_collective(CommOp op) {
  // Stateless: one object per kind serves every entry of every schedule.
  static const std::shared_ptr<CollectiveStrategy> kStrategies[] = {
      std::make_shared<PlainCollective>(CommOp::AllReduce),
      std::make_shared<PlainCollective>(CommOp::ReduceScatter),
      std::make_shared<PlainCollective>(CommOp::AllGather)};
  ZM_ASSERT(op == CommOp::AllReduce || op == CommOp::ReduceScatter || op == CommOp::AllGather,
            "no plain strategy for {}", comm_op_name(op));
  return kStrategies[static_cast<int>(op)];
}

Communicator& communicator_of(const MeshComms& comms, const ScheduleHop& hop) {
  Communicator* comm = nullptr;
  switch (hop.group) {
    case MeshGroup::Shard:
      comm = &comms.group();
      break;
    case MeshGroup::Replicate:
      comm = comms.replicas();
      break;
    case MeshGroup::World:
      comm = &comms.world();
      break;
    case MeshGroup::Model:
      comm = comms.model_parallel();
      break;
    case MeshGroup::Added:
      comm = comms.added(hop.added);
      break;
  }
  ZM_ASSERT(comm != nullptr, "the schedule names the {} communicator, which this mesh lacks",
            hop.added.empty() ? mesh_group_name(hop.group) : hop.added);
  return *comm;
}

CommRequest post_hop(const ScheduledCollective& c, const ScheduleHop& hop, CommOp op,
                     const void* send, void* recv, size_t count, DType type,
                     const MeshComms& comms) {
  const PlannedCollective& wire = hop.wire;
  Communicator& comm = communicator_of(comms, hop);
  // The whole buffer's elements as the wire record counts them: the all-reduce's are `count`,
  // the others' `count` per rank.
  const auto whole = static_cast<int64_t>(op == CommOp::AllReduce ? count : count * comm.size());
  ZM_ASSERT(
      wire.op == op && wire.ranks == comm.size() && wire_dtype(wire) == type && wire.count == whole,
      "{} of unit {}: scheduled as {} of {} x {}B on {} ranks, posted as {} of {} x {}B on "
      "{} ranks",
      schedule_role_name(c.role), c.unit, comm_op_name(wire.op), wire.count, wire.element_bytes,
      wire.ranks, comm_op_name(op), whole, dtype_size(type), comm.size());
  const CommTag tag{c.unit, c.role == ScheduleRole::StepStatistics ? CommPurpose::Stats
                            : c.gathers()                          ? CommPurpose::ParamGather
                                                                   : CommPurpose::GradReduce};
  switch (op) {
    case CommOp::AllReduce:
      return comm.iall_reduce_sum(recv, count, type, tag);
    case CommOp::ReduceScatter:
      return comm.ireduce_scatter_sum(send, recv, count, type, tag);
    case CommOp::AllGather:
      return comm.iall_gather(send, recv, count, type, tag);
    case CommOp::AllToAll:
      return comm.iall_to_all(send, recv, count, type, tag);
    default:
      ZM_ASSERT(false, "{} is not a scheduled collective", comm_op_name(op));
      return {};
  }
}

}  // namespace zm
