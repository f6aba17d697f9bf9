#include "zero/run_plan.hpp"

#include "model/gpt.hpp"
#include "model/layout.hpp"

namespace zm {

BufferSpec step_stats_buffer() {
  return {"step_stats", MemCategory::CommBuffers, kStepStatsCount, 4};
}

std::vector<BufferSpec> run_buffer_plan(const Deck& deck, int stage, const ZeroMesh& mesh) {
  const ParamLayout layout(deck.model);
  const PartitionPlan plan(layout, mesh.group_ranks(), mesh.sub_shards());
  std::vector<BufferSpec> buffers = ZeroEngine::buffer_plan(stage, plan, deck, mesh);
  for (auto& spec : gpt_buffer_plan(deck.model, deck.train.micro_batch, deck.model.seq_len,
                                    compute_element_bytes(deck)))
    buffers.push_back(spec);
  buffers.push_back(step_stats_buffer());
  return buffers;
}

std::vector<ZeroEngine::PlannedCollective> run_traffic_plan(const Deck& deck, int stage,
                                                            const PartitionPlan& plan,
                                                            const ZeroMesh& mesh) {
  auto collectives = ZeroEngine::traffic_plan(stage, plan, deck, mesh);
  collectives.push_back({CommOp::AllReduce, kStepStatsCount, 4, mesh.world(), world_level(mesh)});
  return collectives;
}

}  // namespace zm
