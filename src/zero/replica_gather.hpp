// hpZ's gather of the updated sub-shards across the groups under qwZ (zero.quantize_weights =
// "int8") and mixed precision: after the optimizer updated unit u's sub-shard of the compute copy,
// each rank quantizes it, all-gathers the packed segments across the replicas
// (zero/int8_gather.hpp) and dequantizes every segment, its own included, into its group shard, so
// that every replica holds bitwise the same parameters. The fp32 masters are never quantized. Under
// fp32 the group shard's own sub-shard is the master itself, so that gather stays unquantized.
//
// Overlap (zero.overlap) as the unquantized gather: the next unit's update runs while a gather is
// in flight, in two packed buffers used in turn (a unit's gather completes, and is dequantized,
// before its buffer takes the unit after the next); without overlap one buffer, and each gather
// blocks and is dequantized at once.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "comm/communicator.hpp"
#include "core/memory.hpp"
#include "core/zero_mesh.hpp"
#include "kernels/team_shape.hpp"
#include "zero/partition.hpp"
#include "zero/schedule.hpp"
#include "zero/zero_options.hpp"

namespace zm {

template <typename Real>
class ZeroEngineT;

// Whether a run quantizes hpZ's cross-group gather: int8 weights, mixed precision, and the
// optimizer state in sub-shards (hpZ). The step schedule asks (build_step_schedule), and says so
// with an Int8AllGather as the UpdateGather's strategy.
bool quantizes_replica_gather(const ZeroOptions& options, const ZeroMesh& mesh);

// Its packed buffers (comm_buffers), each the largest unit's segments of all replicas.
std::vector<BufferSpec> replica_gather_buffers(const Partition& partition,
                                               const ZeroOptions& options);

template <typename Real>
class QuantizedReplicaGather {
 public:
  QuantizedReplicaGather(const Partition& partition, const ZeroOptions& options,
                         Communicator& replicas, kernels::TeamShape shape, MemoryLedger* ledger);
  ~QuantizedReplicaGather();

  // Quantizes sub-shard `replicas.rank()` of unit c.unit's group shard `shard` (the compute copy,
  // just updated) and posts its gather, the scheduled `c`; where `c` blocks, completes it.
  void post(const ScheduledCollective& c, ZeroEngineT<Real>& engine, Real* shard);
  // Completes every posted gather: waits, then dequantizes into the group shards.
  void finish();

 private:
  struct InFlight {
    CommRequest request;
    int unit = -1;  // -1: the buffer is free
    Real* shard = nullptr;
  };
  void complete(InFlight& gather, bool blocking);

  const Partition& partition_;
  int64_t block_;
  Communicator& replicas_;
  kernels::TeamShape shape_;
  std::vector<TrackedBuffer<uint8_t>> packed_;
  std::vector<InFlight> in_flight_;  // one per packed buffer
  size_t next_ = 0;                  // the buffer the next gather takes
};

}  // namespace zm
