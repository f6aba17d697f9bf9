// With the module largest_model: offload's axis of `zeromini plan --largest` (--offload) and,
// without it, the deck's offload settings in the heading. Built when both modules are
// (cmake/ZeroMiniModules.cmake: a module's with_<other>/ folder).
#include <fmt/format.h>

#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/stage_spec.hpp"
#include "modules/largest_model/largest.hpp"
#include "modules/offload/offload.hpp"
#include "plan/machine.hpp"
#include "plan/planner.hpp"

namespace zm {

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

// `plan --largest --offload`: {none, optimizer, optimizer + parameters} for every cell, each with
// its device memory, host memory per node and step time.
LargestAxis largest_offload_axis() {
  LargestAxis axis;
  axis.flag = "--offload";
  axis.help =
      "With --largest: add an offload axis {none, optimizer (zero.offload_optimizer = host, "
      "stages 1-3), optimizer + params (zero.offload_params = host too, stage 3)}, with each "
      "cell's device memory, host memory per node and step time (the machine file needs "
      "[host]); without it the deck's offload settings apply";
  auto values = [](const char* optimizer, const char* params) {
    return std::vector<std::pair<std::string, ModuleValue>>{
        {"zero.offload_optimizer", std::string(optimizer)},
        {"zero.offload_params", std::string(params)}};
  };
  axis.variants = {
      {"none", "no offload", values("none", "none"),
       [](const StageSpec&, LargestSharding) { return true; }},
      {"optimizer", "offload optimizer", values("host", "none"),
       [](const StageSpec& spec, LargestSharding) { return spec.shards_states(); }},
      {"optimizer+params", "offload optimizer + params (stage 3)", values("host", "host"),
       [](const StageSpec& spec, LargestSharding sharding) {
         return spec.gathers_parameters() && sharding != LargestSharding::Hpz;
       }},
  };
  axis.check = [](const Machine& machine) {
    if (!machine.host)
      fail(
          "--offload: {} has no [host] table, so offload cannot be priced on this machine. "
          "Expected a [host] table with memory_per_node_gib, link, link_bandwidth_gbs and "
          "adamw_gparams_per_s (as in inputs/machines/dgx-h100.toml)",
          machine.source());
  };
  axis.cell = [](const LargestModel& c, const char* mark) {
    const PlanPoint& p = c.point;
    return fmt::format("{:>6} {:>8.2f} {:>6.1f} {:>8.1f} {:>9.3f}{}", c.layers, p.params / 1e9,
                       p.memory.total() / kGiB, p.host_bytes_per_node / kGiB,
                       p.step_seconds_overlapped, mark);
  };
  axis.units = fmt::format("{:>6} {:>8} {:>6} {:>8} {:>9} ", "layers", "params B", "dev GiB",
                           "host/nd", "step s");
  axis.width = 44;
  axis.heading = [](const Deck&, const Machine& machine) {
    const HostSide& host = *machine.host;  // check refused a machine without it
    return fmt::format(
        "  offload (--offload): none; optimizer: zero.offload_optimizer = \"host\" (stages 1-3:\n"
        "    fp32 master, Adam m and v and AdamW on the host); optimizer + params: also\n"
        "    zero.offload_params = \"host\" (stage 3 without hpZ: the parameter shard on the "
        "host)\n"
        "  host: {:.0f} GiB per node, {} at {:.4g} GB/s per device each way, host AdamW {:.4g} G\n"
        "    parameters/s per device with every device of a node updating ({})\n",
        host.memory_per_node_bytes / kGiB, host.link, host.link_bandwidth / 1e9,
        host.adamw_params_per_second / 1e9, machine.source());
  };
  axis.cells_note =
      "\nEach cell: the deepest model of this width whose per-device memory and per-node host\n"
      "memory fit (layers), its parameters (billions), its device memory per device and host\n"
      "memory per node (GiB), and its estimated step time in seconds, compute and communication\n"
      "overlapped, offload's copies and host update added; '*': communication-bound.\n";
  axis.footnote =
      "Offload: host memory per node = the offloaded state of a rank (master, m, v, staging;\n"
      "with parameters offloaded the shard too) x the ranks on a node, which must fit the\n"
      "machine's [host] memory. Its time: at stages 2-3 with one shard group the gradient\n"
      "shard copied to the host as backward completes each unit (beside backward with one\n"
      "micro-step and no fp32 sum, else waited); else, after backward, the gradients copied\n"
      "unit by unit while the host runs AdamW on the previous unit; the update copied back\n"
      "(waited), and with parameters offloaded the shard staged to the device before each\n"
      "gather; the step time adds what backward does not hide (plan/offload_cost.hpp).\n"
      "-: offload of the optimizer is a stage 1-3 option, of the parameters a stage 3 option\n"
      "without hpZ.\n";
  axis.csv_header = ",offload,host_bytes_per_node,transfer_s,host_update_s,offload_s";
  axis.csv_cells = [names = axis.variants](const LargestModel& c) {
    return axis_csv_cells(names, c, 4, [](const PlanPoint& p) {
      return fmt::format(",{:.0f},{:.6g},{:.6g},{:.6g}", p.host_bytes_per_node,
                         point_figure(p, "transfer_s"), point_figure(p, "host_update_s"),
                         point_figure(p, "offload_s"));
    });
  };
  return axis;
}

// Without the axis, the deck's own settings in the heading of `plan --largest`.
std::string largest_note(const Deck& deck) {
  if (!offload_settings(deck).optimizer) return "";
  return fmt::format(
      "  offload: the deck's zero.offload_optimizer = \"{}\", zero.offload_params = \"{}\"\n",
      deck.value<std::string>("zero.offload_optimizer"),
      deck.value<std::string>("zero.offload_params"));
}

}  // namespace

void register_module_offload_with_largest_model() {
  add_largest_axis(largest_offload_axis());
  add_largest_note(largest_note);
}

}  // namespace zm
