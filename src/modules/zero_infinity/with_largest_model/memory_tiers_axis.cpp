// With the module largest_model: ZeRO-Infinity's axis of `zeromini plan --largest` (--tiers), the
// paper's comparison of where the model state lives: on the GPU only; the optimizer state and
// (stage 3) the parameter shard in host memory (CPU + GPU, ZeRO-Offload); the same in the NVMe
// swap files (NVMe + CPU + GPU, the host running AdamW). Each cell is the deepest model that fits
// the device memory, the host memory and the drives of a node (the core's fit conditions), with
// its step time. The NVMe store lives in with_offload/, so the axis exists only where the module
// offload is built too (its keys name the tiers).
#include <fmt/format.h>

#include <string>
#include <utility>
#include <vector>

#include "core/deck_keys.hpp"
#include "core/error.hpp"
#include "core/stage_spec.hpp"
#include "modules/largest_model/largest.hpp"
#include "plan/machine.hpp"
#include "plan/planner.hpp"

namespace zm {

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

// Where the state may go at this stage and sharding: the optimizer state wherever it is sharded,
// the parameter shard at stage 3 (hpZ's secondary shard stays on the device, so not under hpZ).
bool offloadable(const StageSpec& spec, LargestSharding sharding) {
  return spec.shards_states() && sharding != LargestSharding::Hpz;
}

LargestAxis memory_tiers_axis() {
  LargestAxis axis;
  axis.flag = "--tiers";
  axis.help =
      "With --largest: add ZeRO-Infinity's axis of memory tiers {GPU only; CPU + GPU: "
      "zero.offload_optimizer and zero.offload_params = \"host\"; NVMe + CPU + GPU: both "
      "\"nvme\", with zero.nvme_gradients} (the parameters at stage 3 only), off the device "
      "with model.checkpoints = \"host\" under recomputation, with each cell's host memory and "
      "NVMe per node (the machine file needs [host] and [nvme])";
  // Off the device, the activation checkpoints go to the host too where blocks are recomputed.
  // On NVMe the gradient shard too (zero.nvme_gradients), where the stage offloads it.
  auto values = [](const char* home) {
    std::vector<std::pair<std::string, ModuleValue>> set = {
        {"zero.offload_optimizer", std::string(home)},
        {"zero.offload_params", std::string(home)},
        {"model.checkpoints", std::string(home == std::string("none") ? "device" : "host")}};
    if (home == std::string("nvme")) set.emplace_back("zero.nvme_gradients", true);
    return set;
  };
  axis.variants = {
      {"gpu", "GPU only", values("none"), [](const StageSpec&, LargestSharding) { return true; }},
      {"cpu", "CPU + GPU", values("host"), offloadable},
      {"nvme", "NVMe + CPU + GPU", values("nvme"), offloadable},
  };
  axis.check = [](const Machine& machine) {
    if (!machine.host || machine.number("nvme.capacity_per_node_tb", 1e12) <= 0)
      fail(
          "--tiers: {} needs a [host] table and an [nvme] table to price host memory and the "
          "drives (as in inputs/machines/dgx2-v100-32gb.toml)",
          machine.source());
  };
  axis.cell = [](const LargestModel& c, const char* mark) {
    const PlanPoint& p = c.point;
    return fmt::format("{:>6} {:>9.2f} {:>6.1f} {:>7.0f} {:>6.2f} {:>9.3f}{}", c.layers,
                       p.params / 1e9, p.memory.total() / kGiB, p.host_bytes_per_node / kGiB,
                       point_figure(p, "nvme_bytes_per_node") / 1e12, p.step_seconds_overlapped,
                       mark);
  };
  axis.units = fmt::format("{:>6} {:>9} {:>6} {:>7} {:>6} {:>9} ", "layers", "params B", "dev GiB",
                           "host/nd", "TB/nd", "step s");
  axis.width = 50;
  axis.heading = [](const Deck&, const Machine& machine) {
    return fmt::format(
        "  memory tiers (--tiers): GPU only; CPU + GPU: the optimizer state (stages 1-3) and the\n"
        "    parameter shard (stage 3) in host memory; NVMe + CPU + GPU: both and the gradient\n"
        "    shard (stages 2-3) in swap files on the node's drives, AdamW on the host; off the\n"
        "    device, under recomputation, the activation checkpoints in host memory\n"
        "    (model.checkpoints = \"host\")\n"
        "  per node: {:.0f} GiB host memory, {:.4g} TB NVMe ({})\n",
        machine.host->memory_per_node_bytes / kGiB,
        machine.number("nvme.capacity_per_node_tb", 1e12) / 1e12, machine.source());
  };
  axis.cells_note =
      "\nEach cell: the deepest model of this width whose device memory per device, host memory\n"
      "per node and NVMe swap files per node fit (layers), its parameters (billions), its\n"
      "device memory (GiB), host memory per node (GiB), swap files per node (TB), and its step\n"
      "time in seconds, compute and communication overlapped, the offload's copies, host\n"
      "update and NVMe transfers added; '*': communication-bound.\n";
  axis.footnote =
      "Tiers: the host and NVMe prices are the modules offload's and zero_infinity's (plan\n"
      "without --largest lists them per column). -: offload is a stage 1-3 option, not under\n"
      "hpZ. A cell of 0 layers: not even one block's working memory fits the device (one\n"
      "gathered unit and its activations).\n";
  axis.csv_header = ",tiers,host_bytes_per_node,nvme_bytes_per_node,offload_s,nvme_s";
  axis.csv_cells = [names = axis.variants](const LargestModel& c) {
    return axis_csv_cells(names, c, 4, [](const PlanPoint& p) {
      return fmt::format(",{:.0f},{:.0f},{:.6g},{:.6g}", p.host_bytes_per_node,
                         point_figure(p, "nvme_bytes_per_node"), point_figure(p, "offload_s"),
                         point_figure(p, "nvme_s"));
    });
  };
  return axis;
}

}  // namespace

void register_module_zero_infinity_with_largest_model() {
  // The tiers are the module offload's keys, with this module's store (with_offload/).
  if (module_setting(Deck{}, "zero.offload_optimizer", "").empty()) return;
  add_largest_axis(memory_tiers_axis());
}

}  // namespace zm
