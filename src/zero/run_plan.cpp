#include "zero/run_plan.hpp"

#include "model/gpt.hpp"
#include "model/layout.hpp"

namespace zm {

BufferSpec step_stats_buffer() {
  return {"step_stats", MemCategory::CommBuffers, kStepStatsCount, 4};
}

std::vector<BufferSpec> run_buffer_plan(const Deck& deck, int stage, const ShardLayout& shards) {
  const ParamLayout layout(deck.model);
  const PartitionPlan plan(layout, shards.group, shards.sub_shards());
  std::vector<BufferSpec> buffers = ZeroEngine::buffer_plan(stage, plan, deck);
  for (auto& spec : gpt_buffer_plan(deck.model, deck.train.micro_batch, deck.model.seq_len,
                                    compute_element_bytes(deck)))
    buffers.push_back(spec);
  buffers.push_back(step_stats_buffer());
  return buffers;
}

std::vector<ZeroEngine::PlannedCollective> run_traffic_plan(const Deck& deck, int stage,
                                                            const PartitionPlan& plan,
                                                            const ShardLayout& shards) {
  auto collectives = ZeroEngine::traffic_plan(stage, plan, deck, shards);
  collectives.push_back({CommOp::AllReduce, kStepStatsCount, 4, shards.world,
                         shards.hybrid() ? CommLevel::InterGroup : CommLevel::IntraGroup});
  return collectives;
}

}  // namespace zm
