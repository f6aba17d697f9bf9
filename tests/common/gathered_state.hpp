// A whole fp32 state vector (master parameters, Adam's m or v) in logical layout order (no
// padding) on the host, gathered where the engine's stage shards it: collective then (every rank
// must call it). Tests compare whole states across stages, rank counts and checkpoints with it.
// The state is read through ZeroEngine::copy_state, wherever the optimizer keeps it (device or
// host memory, or files).
#pragma once

#include <Kokkos_Core.hpp>
#include <vector>

#include "zero/engine.hpp"

namespace zm::testing {

enum class StateVector { Params, AdamM, AdamV };

inline std::vector<float> gathered_state(ZeroEngine& engine, StateVector which) {
  const Partition& partition = engine.partition();
  const ParamLayout& layout = partition.layout();
  const Placement& placement =
      which == StateVector::Params ? engine.master_storage() : engine.optimizer_storage();
  // Elements [e, e + n) of unit u's state, copied into device memory.
  Kokkos::View<float*, MemSpace> held(
      "gathered_state_held",
      static_cast<size_t>(partition.max_padded_unit(0, partition.num_units() - 1)));
  auto state_at = [&](int u, int64_t e, int64_t n) {
    std::vector<float> host(static_cast<size_t>(n));
    engine.copy_state(static_cast<int>(which), u, e, n, host.data(), true);
    Kokkos::deep_copy(Kokkos::subview(held, std::make_pair<size_t, size_t>(0, host.size())),
                      Kokkos::View<float*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                          host.data(), host.size()));
    return held.data();
  };
  Communicator& shard_group = engine.comm();
  Communicator* replicas = engine.comms().replicas();
  const int rank = shard_group.rank(), replica = replicas ? replicas->rank() : 0;
  std::vector<float> out(static_cast<size_t>(layout.total()));
  Kokkos::View<float*, MemSpace> gathered, shard;
  if (!placement.replicated())
    gathered = Kokkos::View<float*, MemSpace>(
        "gathered_state",
        static_cast<size_t>(partition.max_padded_unit(0, partition.num_units() - 1)));
  if (placement.shards(kReplicateDim))
    shard = Kokkos::View<float*, MemSpace>(
        "gathered_state_shard",  // the largest unit's: padded units split evenly over the ranks
        static_cast<size_t>(partition.max_padded_unit(0, partition.num_units() - 1) /
                            partition.ranks()));
  for (int u = 0; u < partition.num_units(); ++u) {
    const UnitPartition& p = partition.unit(u);
    const float* unit_data = gathered.data();
    const int64_t first = rank * p.shard;
    if (placement.replicated()) {
      unit_data = state_at(u, 0, p.size);
    } else if (!placement.shards(kReplicateDim)) {
      shard_group.all_gather(state_at(u, first, p.shard), gathered.data(),
                             static_cast<size_t>(p.shard), DType::F32);
    } else {  // hpZ: the sub-shards into this rank's shard, then the shards into the unit
      replicas->all_gather(state_at(u, first + replica * p.sub_shard, p.sub_shard), shard.data(),
                           static_cast<size_t>(p.sub_shard), DType::F32);
      shard_group.all_gather(shard.data(), gathered.data(), static_cast<size_t>(p.shard),
                             DType::F32);
    }
    using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
    Kokkos::View<const float*, MemSpace, Unmanaged> src(unit_data, static_cast<size_t>(p.size));
    Kokkos::View<float*, HostSpace, Unmanaged> dst(out.data() + layout.unit(u).offset,
                                                   static_cast<size_t>(p.size));
    Kokkos::deep_copy(dst, src);
  }
  return out;
}

inline std::vector<float> gathered_parameters(ZeroEngine& engine) {
  return gathered_state(engine, StateVector::Params);
}

}  // namespace zm::testing
