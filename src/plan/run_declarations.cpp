#include "plan/run_declarations.hpp"

#include "core/stage_spec.hpp"
#include "model/gpt.hpp"
#include "model/held_token_grads.hpp"
#include "model/layout.hpp"
#include "plan/run_extensions.hpp"
#include "plan/run_options.hpp"
#include "zero/schedule.hpp"

namespace zm {

BufferSpec step_stats_buffer(const ParamLayout& layout) {
  return {"step_stats", MemCategory::CommBuffers, step_stats_count(layout), 4};
}

std::vector<BufferSpec> run_buffers(const Deck& deck, int stage, const ZeroMesh& mesh,
                                    const AttentionKernels& attention, int part) {
  const ParamLayout layout = run_layout(deck, stage, part);
  const Partition partition(layout, mesh.group_ranks(), mesh.sub_shards());
  const ZeroOptions options = zero_options(deck, stage, mesh, part);
  std::vector<BufferSpec> buffers = ZeroEngine::declared_buffers(stage, partition, options, mesh);
  const RunExtensions extensions = run_extensions(deck, stage);
  const CheckpointHome* home = extensions.checkpoints.get();
  // The models a part's rank holds: the first whole, the others sharing its scratch.
  for (int m = 0; m < (extensions.models_held ? extensions.models_held(part) : 1); ++m) {
    const auto model = gpt_buffers(layout, attention, deck.train.micro_batch, deck.model.seq_len,
                                   element_bytes(options.policy.compute),
                                   home ? home->category() : MemCategory::Activations, m > 0);
    buffers.insert(buffers.end(), model.begin(), model.end());
  }
  if (layout.embeds() && holds_token_grads(stage_spec(stage), deck.train.grad_accum)) {
    const auto held = held_token_grads_buffers(layout.vocab_rows(), deck.model.dim,
                                               element_bytes(options.policy.compute));
    buffers.insert(buffers.end(), held.begin(), held.end());
  }
  buffers.push_back(step_stats_buffer(layout));
  return buffers;
}

std::vector<PlannedCollective> run_traffic(const Deck& deck, int stage, const Partition& partition,
                                           const ZeroMesh& mesh, int part) {
  const ZeroOptions options = zero_options(deck, stage, mesh, part);
  PlannedCollectives traffic = ZeroEngine::declared_traffic(stage, partition, options, mesh);
  const RunExtensions extensions = run_extensions(deck, stage);
  if (extensions.added_traffic)
    for (const PlannedCollective& c : extensions.added_traffic(part, partition, options, mesh))
      traffic.push_back(c);
  return traffic;
}

}  // namespace zm
