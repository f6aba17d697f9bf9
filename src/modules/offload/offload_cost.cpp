#include "modules/offload/offload_cost.hpp"

#include <algorithm>
#include <vector>

#include "core/error.hpp"
#include "core/stage_spec.hpp"
#include "model/layout.hpp"
#include "modules/offload/offload.hpp"
#include "plan/planner.hpp"
#include "plan/run_declarations.hpp"
#include "plan/run_extensions.hpp"
#include "plan/run_options.hpp"
#include "zero/engine.hpp"
#include "zero/partition.hpp"

namespace zm {

void require_host_side(const Deck& deck, int stage, const Machine& machine) {
  const OffloadSettings settings = offload_settings(deck);
  if (machine.host || !offloads(settings, stage_spec(stage))) return;
  fail(
      "{}: no [host] table, so offload cannot be priced on this machine: stage {} keeps the "
      "optimizer state on the host (zero.offload_optimizer = \"{}\", zero.offload_params = "
      "\"{}\"), whose copies, host AdamW and host memory need the machine's host memory per node, "
      "host-device link and host AdamW rate. Expected a [host] table with memory_per_node_gib, "
      "link, link_bandwidth_gbs and adamw_gparams_per_s (as in inputs/machines/dgx-h100.toml), or "
      "a plan without offload",
      machine.source(), stage, deck.value<std::string>("zero.offload_optimizer"),
      deck.value<std::string>("zero.offload_params"));
}

OffloadCost price_offload(const Deck& deck, int stage, const ZeroMesh& mesh,
                          const Machine& machine) {
  OffloadCost cost;
  const StageSpec& spec = stage_spec(stage);
  if (!offloads(offload_settings(deck), spec)) return cost;
  require_host_side(deck, stage, machine);
  const HostSide& host = *machine.host;

  const std::vector<ScheduledTransfer> copies_made = run_copies(deck, stage, mesh);
  cost.transfers = planned_copies(copies_made);
  int64_t copies = 0;
  for (int64_t calls : cost.transfers.calls) copies += calls;
  cost.transfer_seconds =
      cost.transfers.total_bytes() / host.link_bandwidth + host.link_latency * copies;
  const double node_share =
      static_cast<double>(machine.devices_per_node) /
      static_cast<double>(std::min(ranks_on_a_node(mesh), machine.devices_per_node));
  cost.host_rate = host.adamw_params_per_second * node_share;

  // Each unit's copies as the run makes them (its copy list), in unit order.
  const int units = run_layout(deck, stage).num_units();
  auto copy_seconds = [&](const ScheduledTransfer& t) {
    return t.bytes() / host.link_bandwidth + host.link_latency;
  };
  std::vector<double> to_host(static_cast<size_t>(units) + 1, 0.0), update(to_host), back(to_host);
  for (const ScheduledTransfer& t : copies_made) {
    const auto u = static_cast<size_t>(t.unit);
    switch (t.role) {
      case TransferRole::GradientsToHost:
        // The rank's piece (with the gradient shard on the host, piece = shard: one group).
        update[u] = static_cast<double>(t.elements) / cost.host_rate;
        cost.host_elements += t.elements;
        if (t.at == StepPoint::GroupReduced) {  // streamed in backward
          cost.streaming_seconds += copy_seconds(t) * static_cast<double>(t.per_step);
          cost.streaming_overlaps = t.waited != StepPoint::Posted;
        } else {
          to_host[u] = copy_seconds(t);
        }
        break;
      case TransferRole::UpdateToDevice:
        back[u] = copy_seconds(t);
        break;
      case TransferRole::ShardToDevice:
        cost.staging_seconds += copy_seconds(t) * static_cast<double>(t.per_step);
        break;
      case TransferRole::CheckpointToHost:  // not the tier's (host_checkpoints.hpp)
      case TransferRole::CheckpointToDevice:
        break;
    }
  }
  cost.host_update_seconds = static_cast<double>(cost.host_elements) / cost.host_rate;
  cost.optimizer_seconds = to_host[0];
  for (size_t u = 0; u < static_cast<size_t>(units); ++u)
    cost.optimizer_seconds += std::max(update[u], to_host[u + 1]) + back[u];
  return cost;
}

}  // namespace zm
