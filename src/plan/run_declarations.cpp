#include "plan/run_declarations.hpp"

#include "model/gpt.hpp"
#include "model/layout.hpp"
#include "plan/run_options.hpp"

namespace zm {

BufferSpec step_stats_buffer() {
  return {"step_stats", MemCategory::CommBuffers, kStepStatsCount, 4};
}

std::vector<BufferSpec> run_buffers(const Deck& deck, int stage, const ZeroMesh& mesh,
                                    const AttentionKernels& attention) {
  const ParamLayout layout(deck.model, mesh.tp());
  const Partition partition(layout, mesh.group_ranks(), mesh.sub_shards());
  const ZeroOptions options = zero_options(deck, stage, mesh);
  std::vector<BufferSpec> buffers = ZeroEngine::declared_buffers(stage, partition, options, mesh);
  for (auto& spec : gpt_buffers(deck.model, attention, deck.train.micro_batch, deck.model.seq_len,
                                compute_element_bytes(options.policy), mesh.tp()))
    buffers.push_back(spec);
  buffers.push_back(step_stats_buffer());
  return buffers;
}

std::vector<PlannedCollective> run_traffic(const Deck& deck, int stage, const Partition& partition,
                                           const ZeroMesh& mesh) {
  const ZeroOptions options = zero_options(deck, stage, mesh);
  auto collectives = ZeroEngine::declared_traffic(stage, partition, options, mesh);
  // The model's own along tp, every micro-batch, before the step's statistics (the schedule's last
  // entry) as the step posts them.
  const PlannedCollective statistics = collectives.back();
  collectives.pop_back();
  const auto model =
      gpt_tensor_parallel_traffic(deck.model, deck.train.micro_batch, deck.model.seq_len,
                                  compute_element_bytes(options.policy), mesh.tp());
  for (int64_t micro = 0; micro < options.grad_accum; ++micro)
    for (const ModelCollective& c : model)
      collectives.push_back({c.op, c.count, c.element_bytes, mesh.tp(), CommLevel::TensorParallel});
  collectives.push_back(statistics);
  return collectives;
}

PlannedTransfers run_transfers(const Deck& deck, int stage, const ZeroMesh& mesh) {
  const ParamLayout layout(deck.model, mesh.tp());
  const Partition partition(layout, mesh.group_ranks(), mesh.sub_shards());
  return ZeroEngine::declared_transfers(stage, partition, zero_options(deck, stage, mesh), mesh);
}

}  // namespace zm
