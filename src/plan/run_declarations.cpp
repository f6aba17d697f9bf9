#include "plan/run_declarations.hpp"

#include "core/stage_spec.hpp"
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

ForwardOnlyDeclaration run_forward_only(const Deck& deck, int stage, const ZeroMesh& mesh,
                                        int64_t micro_batches) {
  const StageSpec& spec = stage_spec(stage);
  const ParamLayout layout = run_layout(deck, stage);
  const Partition partition(layout, mesh.group_ranks(), mesh.sub_shards());
  const ZeroOptions options = zero_options(deck, stage, mesh);
  const StepSchedule schedule = build_step_schedule(spec, partition, options, mesh);
  ForwardOnlyDeclaration out;
  const PlannedCollectives one = schedule.planned_forward_only();
  const CopyVolume copies =
      options.tier
          ? options.tier->forward_only_copies(
                spec, schedule_context(spec, partition, options, mesh), schedule.collectives())
          : CopyVolume{};
  for (int64_t micro = 0; micro < micro_batches; ++micro) {
    out.collectives.insert(out.collectives.end(), one.begin(), one.end());
    out.copies.bytes += copies.bytes;
    out.copies.copies += copies.copies;
  }
  // The losses summed over the ranks once, as a step's statistics are.
  for (const ScheduleHop& hop : schedule.of(-1, ScheduleRole::StepStatistics).hops)
    out.collectives.push_back(hop.wire);
  return out;
}

}  // namespace zm
