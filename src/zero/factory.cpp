// A stage number onto its record (core/stage_spec.hpp), and the record onto the typed engine for
// the trainer and the buffer and traffic lists (untyped, priced by the deck's precision) for the
// planner: the model state in the record's storage kinds, then what its paths declare.
#include "core/error.hpp"
#include "zero/composed_engine.hpp"

namespace zm {

template <typename Real>
std::unique_ptr<ZeroEngineT<Real>> make_engine(int stage, const Partition& partition,
                                               MeshComms& comms, const Deck& deck,
                                               const std::vector<UnitEvent>& schedule,
                                               kernels::TeamShape team_shape,
                                               MemoryLedger* ledger) {
  return std::make_unique<ComposedEngine<Real>>(stage_spec(stage), partition, comms, deck, schedule,
                                                team_shape, ledger);
}

template std::unique_ptr<ZeroEngineT<float>> make_engine(int, const Partition&, MeshComms&,
                                                         const Deck&, const std::vector<UnitEvent>&,
                                                         kernels::TeamShape, MemoryLedger*);
#if ZEROMINI_HAVE_BF16
template std::unique_ptr<ZeroEngineT<bf16>> make_engine(int, const Partition&, MeshComms&,
                                                        const Deck&, const std::vector<UnitEvent>&,
                                                        kernels::TeamShape, MemoryLedger*);
#endif

std::vector<BufferSpec> ZeroEngine::declared_buffers(int stage, const Partition& partition,
                                                     const Deck& deck, const ZeroMesh& mesh) {
  const StageSpec& spec = stage_spec(stage);
  std::vector<BufferSpec> buffers =
      model_state_buffers(partition, deck, storage_kinds(spec, partition), mesh);
  for (const PathDeclaration& path : {declare_gradient_path(spec, partition, deck),
                                      declare_parameter_path(spec, partition, deck)})
    buffers.insert(buffers.end(), path.buffers.begin(), path.buffers.end());
  return buffers;
}

namespace {

// For every unit, `reductions` reduce-scatters and `gathers` all-gathers of the padded unit in the
// deck's compute type within the shard group and, under hybrid sharding, one all-reduce of the
// unit's shard across the groups.
PlannedCollectives per_unit_traffic(const Partition& partition, const Deck& deck,
                                    const ZeroMesh& mesh, int64_t reductions, int64_t gathers) {
  PlannedCollectives out;
  const int reduced = reduce_element_bytes(deck), gathered = param_element_bytes(deck);
  // Along shard: the unit's reductions and gathers; along replicate: its shard's, where the
  // mesh has replicas (the communicators of comm/mesh_comms.hpp, with their levels).
  const int group = mesh.mesh.size(kShardDim), replicas = mesh.mesh.size(kReplicateDim);
  const CommLevel in_group = level_along(mesh, kShardDim);
  const CommLevel across = level_along(mesh, kReplicateDim);
  ZM_ASSERT(partition.ranks() == group, "partition over {} ranks, shard dimension of {}",
            partition.ranks(), group);
  for (int u = 0; u < partition.num_units(); ++u) {
    const int64_t padded = partition.unit(u).padded;
    for (int64_t i = 0; i < reductions; ++i)
      out.push_back({CommOp::ReduceScatter, padded, reduced, group, in_group});
    const int64_t shard = partition.unit(u).shard;
    if (mesh.sharded_optimizer.shards(kReplicateDim)) {
      // hpZ: the shard reduce-scattered into sub-shards, and gathered back
      out.push_back({CommOp::ReduceScatter, shard, reduced, replicas, across});
      out.push_back({CommOp::AllGather, shard, gathered, replicas, across});
    } else if (replicas > 1) {  // the shard's replicas all-reduce it
      out.push_back({CommOp::AllReduce, shard, reduced, replicas, across});
    }
    for (int64_t i = 0; i < gathers; ++i)
      out.push_back({CommOp::AllGather, padded, gathered, group, in_group});
  }
  return out;
}

}  // namespace

std::vector<ZeroEngine::PlannedCollective> ZeroEngine::declared_traffic(int stage,
                                                                        const Partition& partition,
                                                                        const Deck& deck,
                                                                        const ZeroMesh& mesh) {
  const StageSpec& spec = stage_spec(stage);
  PlannedCollectives out;
  int64_t reductions = 0, gathers = 0;
  for (const PathDeclaration& path : {declare_gradient_path(spec, partition, deck),
                                      declare_parameter_path(spec, partition, deck)}) {
    out.insert(out.end(), path.step_collectives.begin(), path.step_collectives.end());
    reductions += path.reductions_per_unit;
    gathers += path.gathers_per_unit;
  }
  // The per-unit collectives of paths that reduce per unit, with the cross-group reductions of
  // their shards (a path that all-reduces whole buckets runs in one group).
  if (reductions > 0) {
    const PlannedCollectives per_unit =
        per_unit_traffic(partition, deck, mesh, reductions, gathers);
    out.insert(out.end(), per_unit.begin(), per_unit.end());
  }
  return out;
}

}  // namespace zm
