#include "plan/run_declarations.hpp"

#include "model/gpt.hpp"
#include "model/layout.hpp"
#include "plan/run_extensions.hpp"
#include "plan/run_options.hpp"
#include "zero/schedule.hpp"

namespace zm {

BufferSpec step_stats_buffer() {
  return {"step_stats", MemCategory::CommBuffers, kStepStatsCount, 4};
}

std::vector<BufferSpec> run_buffers(const Deck& deck, int stage, const ZeroMesh& mesh,
                                    const AttentionKernels& attention) {
  const ParamLayout layout = run_layout(deck, stage);
  const Partition partition(layout, mesh.group_ranks(), mesh.sub_shards());
  const ZeroOptions options = zero_options(deck, stage, mesh);
  std::vector<BufferSpec> buffers = ZeroEngine::declared_buffers(stage, partition, options, mesh);
  const std::shared_ptr<CheckpointHome> home = run_extensions(deck, stage).checkpoints;
  for (auto& spec : gpt_buffers(layout, attention, deck.train.micro_batch, deck.model.seq_len,
                                element_bytes(options.policy.compute),
                                home ? home->category() : MemCategory::Activations))
    buffers.push_back(spec);
  buffers.push_back(step_stats_buffer());
  return buffers;
}

std::vector<PlannedCollective> run_traffic(const Deck& deck, int stage, const Partition& partition,
                                           const ZeroMesh& mesh) {
  return ZeroEngine::declared_traffic(stage, partition, zero_options(deck, stage, mesh), mesh);
}

}  // namespace zm
