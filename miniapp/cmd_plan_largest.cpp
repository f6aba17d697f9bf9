// `zeromini plan DECK --machine FILE --largest`: the largest model of the deck's width that fits a
// device, for each device count x the plan's axes (plan/plan_extensions.hpp) x stage x sharding
// {all, node, hpZ node} x model.recompute {none, blocks} (plan/largest.hpp). The table has one
// block per recompute setting, with the three shardings of a devices x axes x stage side by side;
// the CSV has
// one row per cell, for scripts. With --offload, an offload axis {none, optimizer, optimizer +
// parameters}: one block per recompute x sharding, the three offload settings side by side, each
// cell with its device memory, host memory per node and step time.
#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "commands.hpp"
#include "core/deck.hpp"
#include "core/error.hpp"
#include "core/zero_mesh.hpp"
#include "plan/largest.hpp"
#include "plan/machine.hpp"
#include "plan/plan_extensions.hpp"
#include "plan/planner.hpp"

namespace zm::cli {

namespace {

const char* shard_name(const LargestOption& option) {
  switch (option.sharding) {
    case LargestSharding::Node:
      return "node";
    case LargestSharding::Hpz:
      return "hpz";
    default:
      return "all";
  }
}

// The column heading of a sharding in the table.
const char* shard_heading(LargestSharding sharding) {
  switch (sharding) {
    case LargestSharding::Node:
      return "shard node";
    case LargestSharding::Hpz:
      return "hpZ node";
    default:
      return "shard all";
  }
}
const char* recompute_name(const LargestOption& option) {
  return option.recompute ? "blocks" : "none";
}

// The offload setting's CSV name and table heading.
const char* offload_name(LargestOffload offload) {
  switch (offload) {
    case LargestOffload::Optimizer:
      return "optimizer";
    case LargestOffload::OptimizerAndParams:
      return "optimizer+params";
    case LargestOffload::None:
      return "none";
    case LargestOffload::AsDeck:
      break;
  }
  return "deck";
}
const char* offload_heading(LargestOffload offload) {
  switch (offload) {
    case LargestOffload::Optimizer:
      return "offload optimizer";
    case LargestOffload::OptimizerAndParams:
      return "offload optimizer + params (stage 3)";
    default:
      return "no offload";
  }
}

bool has_offload_axis(const std::vector<LargestModel>& cells) {
  return std::any_of(cells.begin(), cells.end(), [](const LargestModel& c) {
    return c.option.offload != LargestOffload::AsDeck;
  });
}

constexpr double kGiB = 1024.0 * 1024 * 1024;

// Whether the cells of plan axis `a` take other values than 1: its columns are shown then.
bool axis_shown(const std::vector<LargestModel>& cells, size_t a) {
  return std::any_of(cells.begin(), cells.end(),
                     [&](const LargestModel& c) { return c.axes[a] != 1; });
}

// Where a plan axis's cells take other values than 1, the CSV ends with its columns
// (plan/plan_extensions.hpp). With the offload axis, after those: offload, host_bytes_per_node,
// transfer_s, host_update_s, offload_s.
void print_csv(const Deck& deck, const Machine& machine, const std::vector<LargestModel>& cells) {
  std::vector<size_t> axes;  // the plan axes shown
  std::string axes_header;
  for (size_t a = 0; a < plan_axes().size(); ++a)
    if (axis_shown(cells, a)) {
      axes.push_back(a);
      axes_header += plan_axes()[a].largest_header;
    }
  const bool offload_columns = has_offload_axis(cells);
  fmt::print(
      "deck,machine,precision,devices,stage,shard,shard_size,groups,recompute,layers,params,"
      "total_bytes,model_states_bytes,activations_bytes,compute_s,comm_s,step_overlapped_s,"
      "step_serial_s,intra_group_bytes,inter_group_bytes{}{}\n",
      axes_header,
      offload_columns ? ",offload,host_bytes_per_node,transfer_s,host_update_s,offload_s" : "");
  // The axes' columns of a cell, with its plan when it has a model; then the offload columns.
  auto tail = [&](const LargestModel& c, const PlanPoint* point) {
    std::string text;
    for (size_t a : axes) text += plan_axes()[a].largest_cells(c.axes[a], point);
    if (!offload_columns) return text;
    text += fmt::format(",{}", offload_name(c.option.offload));
    if (!c.possible || c.layers == 0) return text + ",,,,";
    const PlanPoint& p = c.point;
    return text + fmt::format(",{:.0f},{:.6g},{:.6g},{:.6g}", p.host_bytes_per_node,
                              p.offload.transfer_seconds, p.offload.host_update_seconds,
                              p.offload.step_seconds());
  };
  for (const LargestModel& c : cells) {
    if (!c.applies) continue;  // hpZ below stage 3: no such run
    std::string row = fmt::format("{},{},{},{},{},{},", deck.path, machine.name,
                                  memory_model_name(deck.train.precision), c.devices, c.stage,
                                  shard_name(c.option));
    // A cell that cannot be launched has no shard groups; one where nothing fits has no model.
    if (!c.possible) {
      fmt::print("{},,{},,,,,,,,,,,{}\n", row, recompute_name(c.option), tail(c, nullptr));
      continue;
    }
    row += fmt::format("{},{},{},{}", c.mesh.group_ranks(), c.mesh.groups(),
                       recompute_name(c.option), c.layers);
    if (c.layers == 0) {
      fmt::print("{},0,,,,,,,,,{}\n", row, tail(c, nullptr));
      continue;
    }
    const PlanPoint& p = c.point;
    fmt::print("{},{},{:.0f},{:.0f},{:.0f},{:.6g},{:.6g},{:.6g},{:.6g},{:.0f},{:.0f}{}\n", row,
               p.params, p.memory.total(), p.memory.model_states(),
               p.memory.bytes[static_cast<int>(MemCategory::Activations)], p.compute_seconds,
               p.comm_seconds, p.step_seconds_overlapped, p.step_seconds_serial,
               p.bytes_at_level(CommLevel::IntraGroup), p.bytes_at_level(CommLevel::InterGroup),
               tail(c, &p));
  }
}

constexpr int kCellWidth = 28;
constexpr int kOffloadCellWidth = 44;

// Layers, parameters in billions and the overlapped step time; '*' marks a step whose
// communication estimate exceeds its compute (the overlapped time is then the network's). With
// the offload axis also the device memory per device and the host memory per node (GiB).
std::string cell_text(const LargestModel& c, bool offload_axis) {
  if (!c.applies) return "-";
  if (!c.possible) return "n/a";
  if (c.layers == 0) return "none fits";
  const PlanPoint& p = c.point;
  const char* mark = p.comm_seconds > p.compute_seconds ? "*" : " ";
  if (offload_axis)
    return fmt::format("{:>6} {:>8.2f} {:>6.1f} {:>8.1f} {:>9.3f}{}", c.layers, p.params / 1e9,
                       p.memory.total() / kGiB, p.host_bytes_per_node / kGiB,
                       p.step_seconds_overlapped, mark);
  return fmt::format("{:>6} {:>9.2f} {:>9.3f}{}", c.layers, p.params / 1e9,
                     p.step_seconds_overlapped, mark);
}

void print_heading(const Deck& deck, const Machine& machine, bool offload_axis) {
  const ModelConfig& m = deck.model;
  fmt::print("zeromini plan --largest: {} on {} ({} devices per node, {:.1f} GiB each)\n",
             deck.path, machine.name, machine.devices_per_node, machine.device_memory_bytes / kGiB);
  fmt::print(
      "  width: dim {}, {} heads, vocab {} (padded {}), seq {}; micro_batch {} x grad_accum {} "
      "per device\n  precision: {}\n",
      m.dim, m.heads, m.vocab, m.padded_vocab(), m.seq_len, deck.train.micro_batch,
      deck.train.grad_accum,
      is_mixed(deck.train.precision)
          ? "mixed (bf16 parameters, gradients, activations; fp32 master, m and v)"
          : "fp32");
  fmt::print(
      "  shard all: zero.shard_size = 0, one group of every device\n"
      "  shard node: zero.shard_size = \"node\", groups of {} consecutive devices (all of them "
      "when fewer)\n"
      "  hpZ node: zero.secondary_shard_size = \"node\" (stage 3 only): parameters in those\n"
      "    groups, the optimizer state over every device\n"
      "  stage 0 shards nothing: its node cells are its all cells\n",
      node_ranks(deck, machine.devices_per_node));
  if (offload_axis) {
    const HostSide& host = *machine.host;  // plan_largest_models refused a machine without it
    fmt::print(
        "  offload (--offload): none; optimizer: zero.offload_optimizer = \"host\" (stages 1-3:\n"
        "    fp32 master, Adam m and v and AdamW on the host); optimizer + params: also\n"
        "    zero.offload_params = \"host\" (stage 3 without hpZ: the parameter shard on the "
        "host)\n"
        "  host: {:.0f} GiB per node, {} at {:.4g} GB/s per device each way, host AdamW {:.4g} G\n"
        "    parameters/s per device with every device of a node updating ({})\n",
        host.memory_per_node_bytes / kGiB, host.link, host.link_bandwidth / 1e9,
        host.adamw_params_per_second / 1e9, machine.source());
  } else if (deck.zero.offload_optimizer != "none") {
    fmt::print(
        "  offload: the deck's zero.offload_optimizer = \"{}\", zero.offload_params = \"{}\"\n",
        deck.zero.offload_optimizer, deck.zero.offload_params);
  }
  if (offload_axis)
    fmt::print(
        "\nEach cell: the deepest model of this width whose per-device memory and per-node host\n"
        "memory fit (layers), its parameters (billions), its device memory per device and host\n"
        "memory per node (GiB), and its estimated step time in seconds, compute and communication\n"
        "overlapped, offload's copies and host update added; '*': communication-bound.\n");
  else
    fmt::print(
        "\nEach cell: the deepest model of this width whose per-device memory fits (layers), its\n"
        "parameters (billions), and its estimated step time in seconds, compute and communication\n"
        "overlapped; '*': communication-bound (the communication estimate exceeds compute).\n");
}

// The table's lines end where their text does.
void print_line(std::string line) {
  line.erase(line.find_last_not_of(' ') + 1);
  fmt::print("{}\n", line);
}

// One block of the table: every devices x stage, the options `in_block` keeps side by side in
// their order (a recompute setting's shardings, or with the offload axis a recompute setting and
// sharding's offload settings), each column headed by `heading`.
template <typename InBlock, typename Heading>
void print_block(const std::vector<LargestModel>& cells, size_t per_row, const std::string& title,
                 InBlock in_block, Heading heading, bool offload_axis) {
  fmt::print("\n{}\n", title);
  // A plan axis's column only where its cells take other values than 1 (4 wide).
  std::vector<size_t> axes;
  for (size_t a = 0; a < plan_axes().size(); ++a)
    if (axis_shown(cells, a)) axes.push_back(a);
  const int width = offload_axis ? kOffloadCellWidth : kCellWidth;
  auto row_start = [&](const std::string& devices, const std::vector<std::string>& values,
                       const std::string& stage) {
    std::string text = fmt::format("{:>7} ", devices);
    for (size_t i = 0; i < axes.size(); ++i) text += fmt::format("{:>4} ", values[i]);
    return text + fmt::format("{:>5} ", stage);
  };
  std::vector<std::string> blank(axes.size()), headings;
  for (size_t a : axes) headings.push_back(plan_axes()[a].name);
  const std::string units = offload_axis
                                ? fmt::format("{:>6} {:>8} {:>6} {:>8} {:>9} ", "layers",
                                              "params B", "dev GiB", "host/nd", "step s")
                                : fmt::format("{:>6} {:>9} {:>9} ", "layers", "params B", "step s");
  std::string groups = row_start("", blank, "");
  std::string columns = row_start("devices", headings, "stage");
  for (size_t k = 0; k < per_row && k < cells.size(); ++k) {
    if (!in_block(cells[k].option)) continue;
    groups += fmt::format("| {:^{}}", heading(cells[k].option), width);
    columns += fmt::format("| {:>{}}", units, width);
  }
  print_line(groups);
  print_line(columns);
  for (size_t i = 0; i < cells.size(); i += per_row) {
    if (i > 0 && (cells[i].devices != cells[i - 1].devices || cells[i].axes != cells[i - 1].axes))
      fmt::print("\n");
    std::vector<std::string> values;
    for (size_t a : axes) values.push_back(std::to_string(cells[i].axes[a]));
    std::string line =
        row_start(std::to_string(cells[i].devices), values, std::to_string(cells[i].stage));
    for (size_t k = i; k < i + per_row; ++k)
      if (in_block(cells[k].option))
        line += fmt::format("| {:>{}}", cell_text(cells[k], offload_axis), width);
    print_line(line);
  }
}

void print_table(const Deck& deck, const Machine& machine, const std::vector<LargestModel>& cells,
                 size_t per_row) {
  const bool offload_axis = has_offload_axis(cells);
  print_heading(deck, machine, offload_axis);
  for (bool recompute : {false, true}) {
    const std::string recompute_title =
        fmt::format("model.recompute = \"{}\"", recompute ? "blocks" : "none");
    if (!offload_axis) {
      print_block(
          cells, per_row, recompute_title,
          [&](const LargestOption& o) { return o.recompute == recompute; },
          [](const LargestOption& o) { return shard_heading(o.sharding); }, false);
      continue;
    }
    for (LargestSharding sharding :
         {LargestSharding::All, LargestSharding::Node, LargestSharding::Hpz})
      print_block(
          cells, per_row, fmt::format("{}, {}", recompute_title, shard_heading(sharding)),
          [&](const LargestOption& o) {
            return o.recompute == recompute && o.sharding == sharding;
          },
          [](const LargestOption& o) { return offload_heading(o.offload); }, true);
  }
  fmt::print(
      "\nMemory: the buffers a run allocates per device (model states, activations,\n"
      "communication buffers, workspace), summed by the planner. Step time: compute = matmul\n"
      "FLOPs (recomputed forward included) at the machine's sustained rate; communication from\n"
      "an alpha-beta ring model, each collective on the intra-node link when its ring stays in\n"
      "a node, else on the inter-node link at k x the per-device rate for k of its ranks in\n"
      "each node (one ring per network card), at most the intra-node rate. An analytic\n"
      "estimate, not a measurement.\n");
  std::string axes_names, axes_notes;
  for (const PlanAxis& axis : plan_axes()) {
    axes_names += ", or " + axis.name + ",";
    axes_notes += " " + axis.largest_note;
  }
  fmt::print(
      "n/a: the node's devices{} do not divide the device count. -: hpZ is a stage 3\n"
      "option.{}\n",
      axes_names, axes_notes);
  if (offload_axis)
    fmt::print(
        "Offload: host memory per node = the offloaded state of a rank (master, m, v, staging;\n"
        "with parameters offloaded the shard too) x the ranks on a node, which must fit the\n"
        "machine's [host] memory. Its time: at stages 2-3 with one shard group the gradient\n"
        "shard copied to the host as backward completes each unit (beside backward with one\n"
        "micro-step and no fp32 sum, else waited); else, after backward, the gradients copied\n"
        "unit by unit while the host runs AdamW on the previous unit; the update copied back\n"
        "(waited), and with parameters offloaded the shard staged to the device before each\n"
        "gather; the step time adds what backward does not hide (plan/offload_cost.hpp).\n"
        "-: offload of the optimizer is a stage 1-3 option, of the parameters a stage 3 option\n"
        "without hpZ.\n");
}

}  // namespace

int plan_largest(const std::vector<Deck>& decks, const Machine& machine,
                 const std::vector<int64_t>& devices, const std::vector<int>& stages,
                 const std::string& format, bool offload_axis) {
  const Deck& deck = decks.front();
  if (offload_axis && !machine.host)
    fail(
        "--offload: {} has no [host] table, so offload cannot be priced on this machine. "
        "Expected a [host] table with memory_per_node_gib, link, link_bandwidth_gbs and "
        "adamw_gparams_per_s (as in inputs/machines/dgx-h100.toml)",
        machine.source());
  const std::vector<LargestModel> cells =
      plan_largest_models(decks, machine, devices, stages, offload_axis);
  if (format == "csv")
    print_csv(deck, machine, cells);
  else
    print_table(deck, machine, cells, largest_options(offload_axis).size());
  return 0;
}

}  // namespace zm::cli
