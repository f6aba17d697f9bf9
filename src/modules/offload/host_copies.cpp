#include "modules/offload/host_copies.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/stage_spec.hpp"
#include "model/layout.hpp"
#include "modules/offload/host_checkpoints.hpp"
#include "plan/run_extensions.hpp"
#include "plan/run_options.hpp"
#include "zero/engine.hpp"
#include "zero/partition.hpp"

namespace zm {

namespace {

// The copies of `copies`, each `posts(t)` times.
template <typename Posts>
PlannedTransfers copies_posted(const std::vector<ScheduledTransfer>& copies, Posts posts) {
  PlannedTransfers out;
  for (const ScheduledTransfer& t : copies) {
    const auto d = static_cast<size_t>(t.direction);
    out.bytes[d] += t.bytes() * static_cast<double>(posts(t));
    out.calls[d] += posts(t);
  }
  return out;
}

}  // namespace

Offload offload_in(const StateHomes& homes) {
  Offload offload;
  offload.optimizer = !on_device(homes.optimizer);
  offload.params = !on_device(homes.params);
  offload.gradients = !on_device(homes.grads);
  return offload;
}

// Each unit's reduced gradients of the optimizer piece to the host (after backward; or, with the
// gradient shard on the host, the shard as backward completes it, every micro-step) and the
// updated piece back, or (parameters on the host) the shard to the device before each gather.
std::vector<ScheduledTransfer> host_copies(const StageSpec& spec, const ScheduleContext& context,
                                           const std::vector<ScheduledCollective>& collectives) {
  const Offload offload = offload_in(context.options.homes);
  std::vector<ScheduledTransfer> out;
  if (!offload.optimizer) return out;
  const PrecisionPolicy& policy = context.options.policy;
  const Partition& partition = context.partition;
  const int optim_pieces = pieces(context.mesh.mesh, context.mesh.placements(spec).optim);
  // The one micro-step's copy straight into the shard goes on beside backward until its receive
  // buffer is taken again; any other the host waits for, to add it.
  const StepPoint streamed_waited =
      shard_sum(context.options) == ShardSum::InPlace ? StepPoint::BucketReuse : StepPoint::Posted;
  for (int u = 0; u < partition.num_units(); ++u) {
    const int64_t piece = partition.unit(u).padded / optim_pieces;
    if (offload.gradients)
      out.push_back({TransferRole::GradientsToHost, TransferDirection::ToHost, u,
                     partition.unit(u).shard, element_bytes(policy.reduce),
                     context.options.grad_accum, StepPoint::GroupReduced, streamed_waited});
    else
      out.push_back({TransferRole::GradientsToHost, TransferDirection::ToHost, u, piece,
                     element_bytes(policy.reduce), 1, StepPoint::UnitUpdated});
    if (!offload.params)
      out.push_back({TransferRole::UpdateToDevice, TransferDirection::ToDevice, u, piece,
                     element_bytes(policy.compute), 1, StepPoint::UnitUpdated});
  }
  if (!offload.params) return out;
  for (const ScheduledCollective& c : collectives)
    if (c.role == ScheduleRole::UnitGather)
      out.push_back({TransferRole::ShardToDevice, TransferDirection::ToDevice, c.unit,
                     partition.unit(c.unit).shard, element_bytes(policy.param), c.per_step,
                     StepPoint::Prefetch, StepPoint::Posted, c.per_forward_only});
  return out;
}

std::vector<ScheduledTransfer> run_copies(const Deck& deck, int stage, const ZeroMesh& mesh) {
  const StageSpec& spec = stage_spec(stage);
  const ParamLayout layout = run_layout(deck, stage);
  const Partition partition(layout, mesh.group_ranks(), mesh.sub_shards());
  const ZeroOptions options = zero_options(deck, stage, mesh);
  const StepSchedule schedule = build_step_schedule(spec, partition, options, mesh);
  return host_copies(spec, schedule_context(spec, partition, options, mesh),
                     schedule.collectives());
}

const ScheduledTransfer& copy_of(const std::vector<ScheduledTransfer>& copies, int unit,
                                 TransferRole role) {
  for (const ScheduledTransfer& t : copies)
    if (t.role == role && t.unit == unit) return t;
  ZM_ASSERT(false, "unit {} has no {} among the step's copies", unit, transfer_role_name(role));
  return copies.front();
}

PlannedTransfers planned_copies(const std::vector<ScheduledTransfer>& copies) {
  return copies_posted(copies, [](const ScheduledTransfer& t) { return t.per_step; });
}

PlannedTransfers planned_forward_only_copies(const std::vector<ScheduledTransfer>& copies) {
  return copies_posted(copies, [](const ScheduledTransfer& t) { return t.per_forward_only; });
}

PlannedTransfers run_transfers(const Deck& deck, int stage, const ZeroMesh& mesh) {
  std::vector<ScheduledTransfer> copies = run_copies(deck, stage, mesh);
  for (const ScheduledTransfer& t : checkpoint_copies(deck)) copies.push_back(t);
  return planned_copies(copies);
}

const char* transfer_role_name(TransferRole role) {
  switch (role) {
    case TransferRole::GradientsToHost:
      return "gradients_to_host";
    case TransferRole::UpdateToDevice:
      return "update_to_device";
    case TransferRole::ShardToDevice:
      return "shard_to_device";
    case TransferRole::CheckpointToHost:
      return "checkpoint_to_host";
    case TransferRole::CheckpointToDevice:
      return "checkpoint_to_device";
  }
  return "?";
}

std::vector<std::string> describe_copies(const std::vector<ScheduledTransfer>& copies, int unit) {
  std::vector<std::string> lines;
  for (const ScheduledTransfer& t : copies)
    if (t.unit == unit)
      lines.push_back(fmt::format(
          "{:<17} {:<28} {:<18} {:<14} {:>12} x {}B{:>16}x{} per step  at {}{}{}", "host_transfer",
          transfer_role_name(t.role), "this rank", transfer_direction_name(t.direction), t.elements,
          t.element_bytes, "", t.per_step, step_point_name(t.at),
          t.waited == StepPoint::Posted ? ""
                                        : fmt::format(", waited {}", step_point_name(t.waited)),
          t.per_forward_only > 0
              ? fmt::format("  x{} per forward-only micro-batch", t.per_forward_only)
              : std::string()));
  return lines;
}

}  // namespace zm
