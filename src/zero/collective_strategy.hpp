// How a scheduled collective moves its data (zero/schedule.hpp). The core's strategies are the
// plain collectives: an all-reduce, a reduce-scatter or an all-gather of the entry's buffer, in the
// type the engine holds it in. A module may supply others (a compressed or hierarchical exchange)
// through a StrategyProvider in the run's options: when the step's schedule is built, the
// providers make that schedule's strategies, each entry the core made is offered to them in turn,
// and the first that takes it rewrites the entry (its hops' wire records, where it is waited). The
// engine posts every entry through its strategy, and a strategy posts each hop through post_hop,
// which checks the call against the hop's wire record: what the planner prices is what a step
// posts.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/mesh_comms.hpp"
#include "core/memory.hpp"
#include "core/zero_mesh.hpp"
#include "kernels/team_shape.hpp"
#include "zero/partition.hpp"
#include "zero/zero_options.hpp"

namespace zm {

struct ScheduledCollective;
struct ScheduleHop;

// What the schedule's builder knows of a run, for a strategy describing its entries.
struct ScheduleContext {
  const Partition& partition;
  const ZeroMesh& mesh;
  const ZeroOptions& options;
  int group_ranks, replicas;      // ranks of the shard group and of the replicas
  CommLevel in_group, across;     // the levels of collectives along `shard` and `replicate`
  int reduce_bytes, param_bytes;  // element sizes of the reductions and the parameter gathers
  // The parameter slots of a gathering parameter path (each may hold a gather in flight).
  int gather_slots;
};

// Where a scheduled collective's data is.
struct ScheduledBuffers {
  // This rank's contribution: the whole padded unit (reductions within the group; a compressed
  // one may use it as scratch), its shard (reductions across the groups) or its piece (gathers).
  void* in;
  // The result: the rank's piece of the sum (reduce-scatter; in `in`'s buffer or elsewhere), the
  // summed buffer (all-reduce, in place) or the whole (gathers).
  void* out;
  int slot = 0;  // the parameter slot a unit gather fills (a strategy may keep state per slot)
};

// What posting needs: the run's communicators, the kernels' teams, the type the engine holds the
// data in (the parameters' for gathers, the reduce type for reductions).
struct PostContext {
  MeshComms& comms;
  kernels::TeamShape team;
  DType held;
};

class CollectiveStrategy {
 public:
  virtual ~CollectiveStrategy() = default;
  // Its name for `entry` in `zeromini plan --schedule` ("all_gather", ...).
  virtual std::string name(const ScheduledCollective& entry) const = 0;
  // Whether it takes `entry`, which the core made for its role and unit (a plain collective).
  virtual bool takes(const ScheduledCollective& /*entry*/,
                     const ScheduleContext& /*context*/) const {
    return false;
  }
  // Rewrites `entry` (made by the core for its role and unit) to what this strategy does: its
  // hops' wire records and groups, the elements per rank, where it is waited.
  virtual void describe(ScheduledCollective& entry, const ScheduleContext& context) const = 0;
  // The buffers it keeps for a run (scratch, state), for the planner and for prepare().
  virtual std::vector<BufferSpec> buffers(const ScheduleContext& /*context*/) const { return {}; }
  // Allocates buffers(): once per engine, before any post.
  virtual void prepare(PlannedAllocator& /*alloc*/, const ScheduleContext& /*context*/,
                       int /*world_rank*/) {}
  // Posts the entry with its data. A strategy whose result needs work after the exchange (a
  // compressed one) may complete at once and return an empty request.
  virtual CommRequest post(const ScheduledCollective& entry, const ScheduledBuffers& buffers,
                           PostContext& context) = 0;
  // After the entry's request completed, before its result is read (a compressed gather unpacks).
  virtual void arrived(const ScheduledCollective& /*entry*/, const ScheduledBuffers& /*buffers*/,
                       PostContext& /*context*/) {}
  // Where the entries of its role are all waited (the optimizer's end for update gathers):
  // completes whatever it still holds in flight.
  virtual void finish(PostContext& /*context*/) {}
};

// A module's strategies for the collectives of a step: made anew for every schedule built, so
// that each engine owns the state its strategies keep (one strategy object serves all the
// entries it takes, and may share scratch buffers and residuals among them).
class StrategyProvider {
 public:
  virtual ~StrategyProvider() = default;
  virtual std::vector<std::shared_ptr<CollectiveStrategy>> strategies(
      const ScheduleContext& context) const = 0;
  // Collective, once per run's communicators, before any post: adds the communicators its
  // hops name (MeshGroup::Added).
  virtual void prepare(MeshComms& /*comms*/) const {}
};

// The core's plain collective of `op` (all-reduce, reduce-scatter or all-gather) on the entry's
// one hop.
std::shared_ptr<CollectiveStrategy> plain_collective(CommOp op);

// The communicator of a hop's group (fails where this mesh lacks it).
Communicator& communicator_of(const MeshComms& comms, const ScheduleHop& hop);

// Posts hop `hop` of `entry` as `op` of `count` elements of `type` (all-reduce: the whole
// buffer, in place in `recv`; reduce-scatter: the piece received; all-gather and all-to-all: the
// piece or block each rank sends), on the hop's communicator, after checking op, type, ranks and
// count against the hop's wire record.
CommRequest post_hop(const ScheduledCollective& entry, const ScheduleHop& hop, CommOp op,
                     const void* send, void* recv, size_t count, DType type,
                     const MeshComms& comms);

}  // namespace zm
