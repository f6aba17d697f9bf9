// The NVMe tier's prices (nvme_plan.hpp). With a machine, its [nvme] table (the module's machine
// keys, register.cpp) gives the node's capacity and its drives' aggregate read and write
// bandwidth, shared by the ranks on the node. A step reads each rank's file and writes it back:
//
//   nvme s = read bytes / (read bandwidth / ranks on the node) + write bytes / (its write share)
//
// all of it in the serial step. In the overlapped one, the store reads unit u + 1 and writes unit
// u - 1 while the host's AdamW updates unit u, and the last unit's write is waited only at the
// next optimizer step: the step waits for unit 0's read, and for what of the other transfers the
// host AdamW (offload's host_update_s) does not hide. The capacity is the core's fit condition
// for MemCategory::Storage (register.cpp gives it: "storage" in the fits column where the state
// of a node's ranks exceeds it).
#include "modules/zero_infinity/with_offload/nvme_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/stage_spec.hpp"
#include "modules/offload/host_copies.hpp"
#include "modules/offload/offload.hpp"
#include "modules/zero_infinity/nvme_layout.hpp"
#include "modules/zero_infinity/nvme_settings.hpp"
#include "plan/plan_extensions.hpp"
#include "plan/planner.hpp"
#include "plan/run_extensions.hpp"
#include "plan/run_options.hpp"
#include "zero/partition.hpp"

namespace zm {

namespace {

bool on_nvme(const Deck& deck, int stage) {
  const OffloadSettings settings = offload_settings(deck);
  return settings.store == "nvme" && offloads(settings, stage_spec(stage));
}

double figure(const PlanPoint& p, const char* name) {
  const auto found = p.figures.find(name);
  return found == p.figures.end() ? 0.0 : found->second;
}

// The [nvme] table's values in bytes and bytes/s; fails, naming the file, where it has none.
struct NvmeSide {
  double capacity_per_node = 0, read_bandwidth = 0, write_bandwidth = 0;
};
NvmeSide nvme_side(const Machine& machine) {
  NvmeSide side{machine.number("nvme.capacity_per_node_tb", 1e12),
                machine.number("nvme.read_bandwidth_gbs", 1e9),
                machine.number("nvme.write_bandwidth_gbs", 1e9)};
  if (side.capacity_per_node <= 0)
    fail(
        "{}: no [nvme] table, so zero.offload_optimizer = \"nvme\" cannot be priced on this "
        "machine: its swap files need the node's NVMe capacity and its drives' read and write "
        "bandwidth. Expected an [nvme] table with capacity_per_node_tb, read_bandwidth_gbs and "
        "write_bandwidth_gbs (as in inputs/machines/dgx2-v100-32gb.toml)",
        machine.source());
  return side;
}

void price(const Deck& deck, int stage, const ZeroMesh& mesh, const Machine* machine,
           double backward_seconds, PlanPoint& p) {
  if (!on_nvme(deck, stage)) return;
  const NvmeVolume volume = planned_nvme(deck, stage, mesh);
  const auto node_ranks = static_cast<double>(ranks_on_a_node(mesh));
  p.figures["nvme_bytes_per_node"] = static_cast<double>(volume.file_bytes) * node_ranks;
  p.figures["nvme_read_bytes"] = static_cast<double>(volume.read_bytes);
  p.figures["nvme_write_bytes"] = static_cast<double>(volume.write_bytes);
  if (!machine) return;
  const NvmeSide side = nvme_side(*machine);
  // The node's drives shared by its ranks (all of its devices where the mesh fills it).
  const double sharing = std::min(node_ranks, static_cast<double>(machine->devices_per_node));
  const double read_rate = side.read_bandwidth / sharing,
               write_rate = side.write_bandwidth / sharing;
  const double read_s = static_cast<double>(volume.read_bytes) / read_rate;
  const double write_s = static_cast<double>(volume.write_bytes) / write_rate;
  const double first_read_s = static_cast<double>(volume.first_unit_bytes) / read_rate;
  const double last_write_s = static_cast<double>(volume.last_unit_bytes) / write_rate;
  const double hidden_by = figure(p, "host_update_s");
  // Backward's gradient transfers go on beside its compute: what is longer than it waited.
  const double grad_s = static_cast<double>(volume.grad_write_bytes) / write_rate +
                        static_cast<double>(volume.grad_read_bytes) / read_rate;
  // The gathers' reads of the parameter shard: the step's first waited where it is made, each
  // other read ahead beside the compute since the gather before (the step's compute shared
  // evenly among its gathers), what is longer than it waited.
  const double shard_s = static_cast<double>(volume.shard_read_bytes) / read_rate;
  const double gathers = static_cast<double>(std::max<int64_t>(volume.shard_gathers, 1));
  const double one_shard_s = shard_s / gathers;
  const double shard_exposed =
      one_shard_s + (gathers - 1) * std::max(0.0, one_shard_s - p.compute_seconds / gathers);
  const double exposed =
      shard_exposed + first_read_s + std::max(0.0, grad_s - backward_seconds) +
      std::max(0.0, read_s - shard_s + write_s - grad_s - first_read_s - last_write_s - hidden_by);
  p.figures["nvme_s"] = read_s + write_s;
  p.figures["nvme_exposed_s"] = exposed;
  p.added_serial_seconds += read_s + write_s;
  p.added_exposed_seconds += exposed;
}

bool any_nvme(const std::vector<PlanPoint>& points) {
  return std::any_of(points.begin(), points.end(),
                     [](const PlanPoint& p) { return figure(p, "nvme_read_bytes") > 0; });
}

std::string gb(double bytes) {
  return fmt::format("{:.3f}", bytes / 1e9);
}

PlanColumns csv_columns() {
  PlanColumns columns;
  columns.at = PlanColumnsAt::AtEnd;
  columns.shown = [](const Deck& deck, const std::vector<PlanPoint>&) {
    return offload_settings(deck).store == "nvme";
  };
  columns.header = ",nvme_bytes_per_node,nvme_read_bytes,nvme_write_bytes,nvme_s,nvme_exposed_s";
  columns.row = [](const Deck&, const PlanPoint& p, bool have_machine) {
    std::string row = fmt::format(",{:.0f},{:.0f},{:.0f}", figure(p, "nvme_bytes_per_node"),
                                  figure(p, "nvme_read_bytes"), figure(p, "nvme_write_bytes"));
    row += have_machine
               ? fmt::format(",{:.6g},{:.6g}", figure(p, "nvme_s"), figure(p, "nvme_exposed_s"))
               : ",,";
    return row;
  };
  return columns;
}

PlanTableColumns table_columns() {
  PlanTableColumns columns;
  columns.shown = any_nvme;
  columns.heading = [](bool have_machine) {
    std::string text = fmt::format(" | {:>10} {:>9}", "nvme/node", "nvme rw");
    if (have_machine) text += fmt::format(" {:>9}", "nvme s");
    return text;
  };
  columns.cells = [](const PlanPoint& p, bool have_machine) {
    std::string text = fmt::format(" | {:>10} {:>9}", gb(figure(p, "nvme_bytes_per_node")),
                                   gb(figure(p, "nvme_read_bytes")));
    if (have_machine) text += fmt::format(" {:>9.4g}", figure(p, "nvme_s"));
    return text;
  };
  return columns;
}

std::string footnote(const std::vector<PlanPoint>& points, const Machine* machine) {
  if (!any_nvme(points)) return "";
  std::string text =
      "NVMe (zero.offload_optimizer = \"nvme\"): nvme/node: the swap files of a node's ranks, "
      "GB; nvme rw: GB each step reads per rank (the rank's file, and with zero.offload_params = "
      "\"nvme\" each gather's shard), and writes back (the file; with zero.nvme_gradients "
      "backward's gradients are in both, each micro-step writing them and each after the first "
      "reading them)";
  if (machine) {
    const NvmeSide side = nvme_side(*machine);
    text += fmt::format(
        "; nvme s: those transfers at the rank's share of the node's {:.4g} GB/s read and {:.4g} "
        "GB/s write ({}'s [nvme], {:.4g} TB per node; fits 'storage' where a node's state exceeds "
        "it). The serial step adds nvme s; the overlapped one the step's first shard read, "
        "backward's gradient transfers beyond backward's compute, what each other gather's read "
        "(made ahead) takes beyond the compute since the gather before, "
        "unit 0's read and what of the rest the host AdamW does not hide (the last unit's write "
        "is waited at the next step)",
        side.read_bandwidth / 1e9, side.write_bandwidth / 1e9, machine->name,
        side.capacity_per_node / 1e12);
  }
  return text + " (zero_infinity/with_offload/nvme_plan.cpp).\n";
}

}  // namespace

NvmeVolume planned_nvme(const Deck& deck, int stage, const ZeroMesh& mesh) {
  NvmeVolume volume;
  if (!on_nvme(deck, stage)) return volume;
  const Partition partition(run_layout(deck, stage), mesh.group_ranks(), mesh.sub_shards());
  const int optim_pieces = pieces(mesh.mesh, mesh.placements(stage_spec(stage)).optim);
  const ZeroOptions options = zero_options(deck, stage, mesh);
  const nvme::FileContents contents =
      nvme::file_contents(options.homes, options.policy, optim_pieces);
  const NvmeSettings settings = nvme_settings(deck);
  volume.file_bytes = nvme::state_file_bytes(partition, contents);
  volume.read_bytes = volume.write_bytes = volume.file_bytes;
  // The optimizer step reads each unit's part and writes back its state; with the gradients
  // there, each micro-step writes them and each after the first reads them first.
  const int64_t micro_steps = deck.train.grad_accum;
  for (int u = 0; u < partition.num_units(); ++u) {
    const int64_t part = nvme::unit_bytes(partition.unit(u).padded, contents);
    const int64_t grads = nvme::grad_array_bytes(partition.unit(u).padded, contents);
    volume.reads += nvme::requests(part, settings.block_bytes);
    volume.writes += nvme::requests(part - grads, settings.block_bytes);
    if (grads == 0) continue;
    volume.write_bytes += (micro_steps - 1) * grads;
    volume.read_bytes += (micro_steps - 1) * grads;
    volume.grad_write_bytes += micro_steps * grads;
    volume.grad_read_bytes += (micro_steps - 1) * grads;
    volume.writes += micro_steps * nvme::requests(grads, settings.block_bytes);
    volume.reads += (micro_steps - 1) * nvme::requests(grads, settings.block_bytes);
  }
  volume.staging_bytes = nvme::staging_bytes(partition, contents, settings.buffers);
  volume.first_unit_bytes = nvme::unit_bytes(partition.unit(0).padded, contents);
  const int64_t last = partition.unit(partition.num_units() - 1).padded;
  volume.last_unit_bytes =
      nvme::unit_bytes(last, contents) - nvme::grad_array_bytes(last, contents);
  if (!contents.params) return volume;
  // Each staged shard (offload's ShardToDevice copies: one per gather of the unit) read first.
  for (const ScheduledTransfer& t : run_copies(deck, stage, mesh)) {
    if (t.role != TransferRole::ShardToDevice) continue;
    const int64_t bytes = nvme::shard_read_bytes(partition.unit(t.unit).padded, contents);
    volume.shard_read_bytes += t.per_step * bytes;
    volume.shard_reads += t.per_step * nvme::requests(bytes, settings.block_bytes);
    volume.shard_gathers += t.per_step;
  }
  volume.read_bytes += volume.shard_read_bytes;
  volume.reads += volume.shard_reads;
  return volume;
}

void register_nvme_plan() {
  add_plan_pricing(price);
  add_plan_columns(csv_columns());
  add_plan_table_columns(table_columns());
  add_plan_footnote(footnote);
}

}  // namespace zm
