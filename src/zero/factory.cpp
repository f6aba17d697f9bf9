// A stage number onto its record (core/stage_spec.hpp), and the record onto the typed engine for
// the trainer and the buffer and traffic lists (untyped, priced by the deck's precision) for the
// planner: the model state in the record's storage kinds, then what its paths declare.
#include <algorithm>

#include "comm/cross_node.hpp"
#include "core/error.hpp"
#include "zero/composed_engine.hpp"
#include "zero/int8_gather.hpp"
#include "zero/quantized_gradients.hpp"

namespace zm {

void check_quantized_weights(const Deck& deck, int stage) {
  if (!deck.zero.quantizes_weights() || stage_spec(stage).gathers_parameters()) return;
  const auto set_at = deck.origin.find("zero.quantize_weights");
  fail(
      "{}: zero.quantize_weights = \"{}\" needs zero.stage = 3, the stage that gathers parameters "
      "per unit; this run is stage {}{}. Expected \"none\" at stages 0-2",
      set_at != deck.origin.end() ? set_at->second : deck.path, deck.zero.quantize_weights, stage,
      deck.zero.all_stages ? " (zero.stage = \"all\" runs stages 0-3)" : "");
}

template <typename Real>
std::unique_ptr<ZeroEngineT<Real>> make_engine(int stage, const Partition& partition,
                                               MeshComms& comms, const Deck& deck,
                                               const std::vector<UnitEvent>& schedule,
                                               kernels::TeamShape team_shape,
                                               MemoryLedger* ledger) {
  check_quantized_weights(deck, stage);
  check_quantized_grads(deck, stage);
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
  const StorageKinds storage = storage_kinds(spec, partition);
  std::vector<BufferSpec> buffers = model_state_buffers(partition, deck, storage, mesh);
  if (quantizes_replica_gather(deck, storage.optim == Storage::SubShard))
    for (const BufferSpec& buffer : replica_gather_buffers(partition, deck))
      buffers.push_back(buffer);
  for (const PathDeclaration& path : {declare_gradient_path(spec, partition, deck, mesh),
                                      declare_parameter_path(spec, partition, deck)})
    buffers.insert(buffers.end(), path.buffers.begin(), path.buffers.end());
  return buffers;
}

namespace {

// For every unit, `reductions` reduce-scatters and `gathers` all-gathers of the padded unit in the
// deck's compute type (or, with a quantize block, every rank's packed int8 segment of its shard)
// within the shard group and, under hybrid sharding, one all-reduce of the unit's shard across the
// groups (hpZ: a reduce-scatter into the sub-shards and the all-gather of the updated sub-shards,
// as int8 segments with a quantize block under mixed precision).
PlannedCollectives per_unit_traffic(const Partition& partition, const Deck& deck,
                                    const ZeroMesh& mesh, int64_t reductions, int64_t gathers,
                                    int64_t quantize_block) {
  PlannedCollectives out;
  const int reduced = reduce_element_bytes(deck), gathered = param_element_bytes(deck);
  // Along shard: the unit's reductions and gathers; along replicate: its shard's, where the
  // mesh has replicas (the communicators of comm/mesh_comms.hpp, with their levels).
  const int group = mesh.mesh.size(kShardDim), replicas = mesh.mesh.size(kReplicateDim);
  const CommLevel in_group = level_along(mesh, kShardDim);
  const CommLevel across = level_along(mesh, kReplicateDim);
  ZM_ASSERT(partition.ranks() == group, "partition over {} ranks, shard dimension of {}",
            partition.ranks(), group);
  // The nodes rank 0's shard group spans (comm/cross_node.hpp): qgZ's hops by node where they
  // are uneven or one.
  const int shard_dim = mesh.mesh.index_of(kShardDim);
  const NodeSpan group_span =
      node_span(group, stride_along(mesh.mesh, shard_dim), mesh.ranks_per_node);
  for (int u = 0; u < partition.num_units(); ++u) {
    const int64_t padded = partition.unit(u).padded;
    const bool qgz = deck.zero.quantizes_grads();  // zero/quantized_gradients.hpp
    for (int64_t i = 0; i < reductions; ++i) {
      if (qgz) {
        const auto hops =
            grad_exchange_in_group(deck, partition.unit(u), group, group_span, in_group);
        out.insert(out.end(), hops.begin(), hops.end());
      } else {
        out.push_back({CommOp::ReduceScatter, padded, reduced, group, in_group});
      }
    }
    const int64_t shard = partition.unit(u).shard;
    const bool hpz = mesh.sharded_optimizer.shards(kReplicateDim);
    if (qgz && replicas > 1)
      out.push_back(grad_exchange_across(deck, partition.unit(u), replicas, hpz, across));
    if (hpz) {
      // hpZ: the shard reduce-scattered into sub-shards, and gathered back
      if (!qgz) out.push_back({CommOp::ReduceScatter, shard, reduced, replicas, across});
      if (quantize_block > 0 && quantizes_replica_gather(deck, hpz))
        out.push_back(planned_int8_gather(partition.unit(u).sub_shard, quantize_block, replicas,
                                          gathered, across));
      else
        out.push_back({CommOp::AllGather, shard, gathered, replicas, across});
    } else if (replicas > 1 && !qgz) {  // the shard's replicas all-reduce it
      out.push_back({CommOp::AllReduce, shard, reduced, replicas, across});
    }
    for (int64_t i = 0; i < gathers; ++i) {
      if (quantize_block > 0) {  // every rank's packed segment, as bytes
        out.push_back(planned_int8_gather(shard, quantize_block, group, gathered, in_group));
      } else {
        out.push_back({CommOp::AllGather, padded, gathered, group, in_group});
      }
    }
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
  int64_t reductions = 0, gathers = 0, quantize_block = 0;
  for (const PathDeclaration& path : {declare_gradient_path(spec, partition, deck, mesh),
                                      declare_parameter_path(spec, partition, deck)}) {
    out.insert(out.end(), path.step_collectives.begin(), path.step_collectives.end());
    reductions += path.reductions_per_unit;
    gathers += path.gathers_per_unit;
    quantize_block = std::max(quantize_block, path.gather_quantize_block);
  }
  // The per-unit collectives of paths that reduce per unit, with the cross-group reductions of
  // their shards (a path that all-reduces whole buckets runs in one group).
  if (reductions > 0) {
    const PlannedCollectives per_unit =
        per_unit_traffic(partition, deck, mesh, reductions, gathers, quantize_block);
    out.insert(out.end(), per_unit.begin(), per_unit.end());
  }
  return out;
}

}  // namespace zm
