// `zeromini plan DECK --machine FILE --largest`, a mode of `plan` (PlanMode,
// plan/plan_extensions.hpp): the largest model of the deck's width that fits a device, for each
// device count x the plan's axes (PlanAxis) x stage x sharding {all, node, hpZ node} x
// model.recompute {none, blocks} (largest.hpp). The table has one block per recompute setting,
// with the three shardings of a devices x axes x stage side by side; the CSV has one row per
// cell, for scripts. With a module's axis (largest.hpp: LargestAxis, e.g. --offload): one block
// per recompute x sharding, the axis's variants side by side, each cell with the axis's figures.
#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "modules/largest_model/plan_largest.hpp"

#include "core/deck.hpp"
#include "core/error.hpp"
#include "core/zero_mesh.hpp"
#include "modules/largest_model/largest.hpp"
#include "plan/machine.hpp"
#include "plan/plan_extensions.hpp"
#include "plan/planner.hpp"

namespace zm {

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

constexpr double kGiB = 1024.0 * 1024 * 1024;

// The plan axes whose cells take other values than 1: their columns are shown.
std::vector<size_t> shown_axes(const std::vector<LargestModel>& cells) {
  std::vector<size_t> shown;
  for (size_t a = 0; a < plan_axes().size(); ++a)
    if (std::any_of(cells.begin(), cells.end(),
                    [&](const LargestModel& c) { return c.axes[a] != 1; }))
      shown.push_back(a);
  return shown;
}

// The CSV ends with the shown plan axes' columns (plan/plan_extensions.hpp); with an axis of
// --largest, then with its columns.
void print_csv(const Deck& deck, const Machine& machine, const std::vector<LargestModel>& cells,
               const LargestAxis* axis) {
  const std::vector<size_t> axes = shown_axes(cells);
  std::string axes_header;
  for (size_t a : axes) axes_header += largest_axis_columns(plan_axes()[a]).header;
  fmt::print(
      "deck,machine,precision,devices,stage,shard,shard_size,groups,recompute,layers,params,"
      "total_bytes,model_states_bytes,activations_bytes,compute_s,comm_s,step_overlapped_s,"
      "step_serial_s,intra_group_bytes,inter_group_bytes{}{}\n",
      axes_header, axis ? axis->csv_header : "");
  // The plan axes' columns of a cell, with its plan when it has a model; then the axis's.
  auto tail = [&](const LargestModel& c, const PlanPoint* point) {
    std::string text;
    for (size_t a : axes) text += largest_axis_columns(plan_axes()[a]).cells(c.axes[a], point);
    return axis ? text + axis->csv_cells(c) : text;
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

// Layers, parameters in billions and the overlapped step time; '*' marks a step whose
// communication estimate exceeds its compute (the overlapped time is then the network's). With
// an axis, what the axis shows.
std::string cell_text(const LargestModel& c, const LargestAxis* axis) {
  if (!c.applies) return "-";
  if (!c.possible) return "n/a";
  if (c.layers == 0) return "none fits";
  const PlanPoint& p = c.point;
  const char* mark = p.comm_seconds > p.compute_seconds ? "*" : " ";
  if (axis) return axis->cell(c, mark);
  return fmt::format("{:>6} {:>9.2f} {:>9.3f}{}", c.layers, p.params / 1e9,
                     p.step_seconds_overlapped, mark);
}

void print_heading(const Deck& deck, const Machine& machine, const LargestAxis* axis) {
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
  if (axis) {
    fmt::print("{}", axis->heading(deck, machine));
  } else {
    for (const LargestNote& note : largest_notes()) fmt::print("{}", note(deck));
  }
  if (axis)
    fmt::print("{}", axis->cells_note);
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
// their order (a recompute setting's shardings, or with an axis a recompute setting and
// sharding's variants), each column headed by `heading`.
template <typename InBlock, typename Heading>
void print_block(const std::vector<LargestModel>& cells, size_t per_row, const std::string& title,
                 InBlock in_block, Heading heading, const LargestAxis* axis) {
  fmt::print("\n{}\n", title);
  // A plan axis's column (4 wide) only where its cells take other values than 1.
  const std::vector<size_t> axes = shown_axes(cells);
  const int width = axis ? axis->width : kCellWidth;
  auto row_start = [&](const std::string& devices, const std::vector<std::string>& values,
                       const std::string& stage) {
    std::string text = fmt::format("{:>7} ", devices);
    for (const std::string& value : values) text += fmt::format("{:>4} ", value);
    return text + fmt::format("{:>5} ", stage);
  };
  std::vector<std::string> blank(axes.size()), headings;
  for (size_t a : axes) headings.push_back(plan_axes()[a].name);
  const std::string units =
      axis ? axis->units : fmt::format("{:>6} {:>9} {:>9} ", "layers", "params B", "step s");
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
        line += fmt::format("| {:>{}}", cell_text(cells[k], axis), width);
    print_line(line);
  }
}

void print_table(const Deck& deck, const Machine& machine, const std::vector<LargestModel>& cells,
                 size_t per_row, const LargestAxis* axis) {
  print_heading(deck, machine, axis);
  for (bool recompute : {false, true}) {
    const std::string recompute_title =
        fmt::format("model.recompute = \"{}\"", recompute ? "blocks" : "none");
    if (!axis) {
      print_block(
          cells, per_row, recompute_title,
          [&](const LargestOption& o) { return o.recompute == recompute; },
          [](const LargestOption& o) { return shard_heading(o.sharding); }, nullptr);
      continue;
    }
    for (LargestSharding sharding :
         {LargestSharding::All, LargestSharding::Node, LargestSharding::Hpz})
      print_block(
          cells, per_row, fmt::format("{}, {}", recompute_title, shard_heading(sharding)),
          [&](const LargestOption& o) {
            return o.recompute == recompute && o.sharding == sharding;
          },
          [&](const LargestOption& o) {
            return axis->variants[static_cast<size_t>(o.variant)].heading;
          },
          axis);
  }
  fmt::print(
      "\nMemory: the buffers a run allocates per device (model states, activations,\n"
      "communication buffers, workspace), summed by the planner. Step time: compute = matmul\n"
      "FLOPs (recomputed forward included) at the machine's sustained rate; communication from\n"
      "an alpha-beta ring model, each collective on the intra-node link when its ring stays in\n"
      "a node, else on the inter-node link at k x the per-device rate for k of its ranks in\n"
      "each node (one ring per network card), at most the intra-node rate. An analytic\n"
      "estimate, not a measurement.\n");
  // The plan axes' part of the note.
  std::string axes_names = "the node's devices", axes_notes;
  for (size_t a = 0; a < plan_axes().size(); ++a) {
    axes_names += (a + 1 == plan_axes().size() ? " or " : ", ") + plan_axes()[a].name;
    axes_notes += " " + largest_axis_columns(plan_axes()[a]).note;
  }
  fmt::print(
      "n/a: {} do not divide the device count. -: hpZ is a stage 3\n"
      "option.{}\n",
      axes_names, axes_notes);
  if (axis) fmt::print("{}", axis->footnote);
}

}  // namespace

int plan_largest(const std::vector<Deck>& decks, const Machine& machine,
                 const std::vector<int64_t>& devices, const std::vector<int>& stages,
                 const std::string& format, const LargestAxis* axis) {
  const Deck& deck = decks.front();
  const std::vector<LargestModel> cells =
      plan_largest_models(decks, machine, devices, stages, axis);
  if (format == "csv")
    print_csv(deck, machine, cells, axis);
  else
    print_table(deck, machine, cells, largest_options(axis).size(), axis);
  return 0;
}

namespace {

// Without --ranks: 1, 2, 4, ..., 1024 devices.
std::vector<int64_t> default_devices() {
  std::vector<int64_t> devices;
  for (int64_t n = 1; n <= 1024; n *= 2) devices.push_back(n);
  return devices;
}

class LargestMode : public PlanMode {
 public:
  PlanFlag flag() override {
    std::string axes_names;
    for (const PlanAxis& axis : plan_axes()) axes_names += " x " + axis.name;
    return {"--largest",
            "Instead: the deepest model of the deck's width that fits a device, with its "
            "parameters and step time, for each rank count" +
                axes_names +
                " x stage x sharding {all, node, "
                "hpZ node (stage 3)} x model.recompute {none, blocks} (needs --machine)",
            &asked_};
  }
  // The modules' axes (largest.hpp), a flag each.
  std::vector<PlanFlag> flags() override {
    axes_.assign(largest_axes().size(), 0);
    std::vector<PlanFlag> out;
    for (size_t a = 0; a < largest_axes().size(); ++a)
      out.push_back({largest_axes()[a].flag, largest_axes()[a].help, nullptr, &axes_[a]});
    return out;
  }
  std::string default_ranks() const override { return "1,2,4,...,1024 with --largest"; }
  void check_unused() override {
    for (size_t a = 0; a < axes_.size(); ++a)
      if (axes_[a]) fail("{}: only with --largest", largest_axes()[a].flag);
  }
  int run(const PlanRequest& request) override {
    if (!request.machine) fail("--largest: needs --machine FILE (the device memory to fit in)");
    std::vector<int64_t> devices = request.ranks();
    if (devices.empty()) devices = default_devices();
    return plan_largest(request.decks, *request.machine, devices, request.stages, request.format,
                        chosen_axis());
  }

 private:
  // The one module axis asked for, or none.
  const LargestAxis* chosen_axis() const {
    const LargestAxis* chosen = nullptr;
    for (size_t a = 0; a < axes_.size(); ++a) {
      if (!axes_[a]) continue;
      if (chosen)
        fail("{} and {}: --largest takes one axis at a time", chosen->flag, largest_axes()[a].flag);
      chosen = &largest_axes()[a];
    }
    return chosen;
  }
  bool asked_ = false;
  std::vector<int> axes_;  // per axis, how often its flag was given
};

}  // namespace

std::unique_ptr<PlanMode> largest_plan_mode() {
  return std::make_unique<LargestMode>();
}

}  // namespace zm
