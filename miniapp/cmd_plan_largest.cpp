// `zeromini plan DECK --machine FILE --largest`: the largest model of the deck's width that fits a
// device, for each device count x tensor-parallel degree (--tp) x stage x sharding {all, node,
// hpZ node} x model.recompute {none, blocks} (plan/largest.hpp). The table has one block per
// recompute setting, with the three shardings of a devices x tp x stage side by side; the CSV has
// one row per cell, for scripts.
#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "commands.hpp"
#include "core/deck.hpp"
#include "core/zero_mesh.hpp"
#include "plan/largest.hpp"
#include "plan/machine.hpp"
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

bool any_tensor_parallel(const std::vector<LargestModel>& cells) {
  return std::any_of(cells.begin(), cells.end(), [](const LargestModel& c) { return c.tp > 1; });
}

// With tensor parallelism anywhere, the CSV ends with tp and tensor_parallel_bytes.
void print_csv(const Deck& deck, const Machine& machine, const std::vector<LargestModel>& cells) {
  const bool tp_columns = any_tensor_parallel(cells);
  fmt::print(
      "deck,machine,precision,devices,stage,shard,shard_size,groups,recompute,layers,params,"
      "total_bytes,model_states_bytes,activations_bytes,compute_s,comm_s,step_overlapped_s,"
      "step_serial_s,intra_group_bytes,inter_group_bytes{}\n",
      tp_columns ? ",tp,tensor_parallel_bytes" : "");
  // The tp columns of a cell, with its tp bytes when it has a model.
  auto tp = [&](const LargestModel& c, const std::string& bytes) {
    return tp_columns ? fmt::format(",{},{}", c.tp, bytes) : std::string();
  };
  for (const LargestModel& c : cells) {
    if (!c.applies) continue;  // hpZ below stage 3: no such run
    std::string row = fmt::format("{},{},{},{},{},{},", deck.path, machine.name,
                                  memory_model_name(deck.train.precision), c.devices, c.stage,
                                  shard_name(c.option));
    // A cell that cannot be launched has no shard groups; one where nothing fits has no model.
    if (!c.possible) {
      fmt::print("{},,{},,,,,,,,,,,{}\n", row, recompute_name(c.option), tp(c, ""));
      continue;
    }
    row += fmt::format("{},{},{},{}", c.mesh.group_ranks(), c.mesh.groups(),
                       recompute_name(c.option), c.layers);
    if (c.layers == 0) {
      fmt::print("{},0,,,,,,,,,{}\n", row, tp(c, ""));
      continue;
    }
    const PlanPoint& p = c.point;
    fmt::print("{},{},{:.0f},{:.0f},{:.0f},{:.6g},{:.6g},{:.6g},{:.6g},{:.0f},{:.0f}{}\n", row,
               p.params, p.memory.total(), p.memory.model_states(),
               p.memory.bytes[static_cast<int>(MemCategory::Activations)], p.compute_seconds,
               p.comm_seconds, p.step_seconds_overlapped, p.step_seconds_serial,
               p.bytes_at_level(CommLevel::IntraGroup), p.bytes_at_level(CommLevel::InterGroup),
               tp(c, fmt::format("{:.0f}", p.bytes_at_level(CommLevel::TensorParallel))));
  }
}

constexpr int kCellWidth = 28;

// Layers, parameters in billions and the overlapped step time; '*' marks a step whose
// communication estimate exceeds its compute (the overlapped time is then the network's).
std::string cell_text(const LargestModel& c) {
  if (!c.applies) return "-";
  if (!c.possible) return "n/a";
  if (c.layers == 0) return "none fits";
  const PlanPoint& p = c.point;
  return fmt::format("{:>6} {:>9.2f} {:>9.3f}{}", c.layers, p.params / 1e9,
                     p.step_seconds_overlapped, p.comm_seconds > p.compute_seconds ? "*" : " ");
}

void print_heading(const Deck& deck, const Machine& machine) {
  const ModelConfig& m = deck.model;
  fmt::print("zeromini plan --largest: {} on {} ({} devices per node, {:.1f} GiB each)\n",
             deck.path, machine.name, machine.devices_per_node,
             machine.device_memory_bytes / (1024.0 * 1024 * 1024));
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

// One block of the table: every devices x stage, the three shardings side by side (the options
// of that recompute setting, in kLargestOptions' order).
void print_block(const std::vector<LargestModel>& cells, bool recompute) {
  fmt::print("\nmodel.recompute = \"{}\"\n", recompute ? "blocks" : "none");
  // The tp column only with tensor parallelism somewhere: else the rows are as before tp.
  const bool tp_column = any_tensor_parallel(cells);
  auto row_start = [&](const std::string& devices, const std::string& tp,
                       const std::string& stage) {
    return tp_column ? fmt::format("{:>7} {:>4} {:>5} ", devices, tp, stage)
                     : fmt::format("{:>7} {:>5} ", devices, stage);
  };
  std::string groups = row_start("", "", "");
  std::string columns = row_start("devices", "tp", "stage");
  for (const LargestOption& option : kLargestOptions) {
    if (option.recompute != recompute) continue;
    groups += fmt::format("| {:^{}}", shard_heading(option.sharding), kCellWidth);
    columns += fmt::format(
        "| {:>{}}", fmt::format("{:>6} {:>9} {:>9} ", "layers", "params B", "step s"), kCellWidth);
  }
  print_line(groups);
  print_line(columns);
  const size_t per_row = std::size(kLargestOptions);
  for (size_t i = 0; i < cells.size(); i += per_row) {
    if (i > 0 && (cells[i].devices != cells[i - 1].devices || cells[i].tp != cells[i - 1].tp))
      fmt::print("\n");
    std::string line = row_start(std::to_string(cells[i].devices), std::to_string(cells[i].tp),
                                 std::to_string(cells[i].stage));
    for (size_t k = i; k < i + per_row; ++k)
      if (cells[k].option.recompute == recompute)
        line += fmt::format("| {:>{}}", cell_text(cells[k]), kCellWidth);
    print_line(line);
  }
}

void print_table(const Deck& deck, const Machine& machine, const std::vector<LargestModel>& cells) {
  print_heading(deck, machine);
  print_block(cells, false);
  print_block(cells, true);
  fmt::print(
      "\nMemory: the buffers a run allocates per device (model states, activations,\n"
      "communication buffers, workspace), summed by the planner. Step time: compute = matmul\n"
      "FLOPs (recomputed forward included) at the machine's sustained rate; communication from\n"
      "an alpha-beta ring model, each collective on the intra-node link when its ring stays in\n"
      "a node, else on the inter-node link at k x the per-device rate for k of its ranks in\n"
      "each node (one ring per network card), at most the intra-node rate. An analytic\n"
      "estimate, not a measurement.\n"
      "n/a: the node's devices, or tp, do not divide the device count. -: hpZ is a stage 3\n"
      "option. tp: parallel.tp, each tp group of consecutive devices holds 1/tp of the split\n"
      "tensors and ZeRO shards over devices / tp; the parameters are the whole model's.\n");
}

}  // namespace

int plan_largest(const Deck& deck, const Machine& machine, const std::vector<int64_t>& devices,
                 const std::vector<int64_t>& tps, const std::vector<int>& stages,
                 const std::string& format) {
  const std::vector<LargestModel> cells = plan_largest_models(deck, machine, devices, tps, stages);
  if (format == "csv")
    print_csv(deck, machine, cells);
  else
    print_table(deck, machine, cells);
  return 0;
}

}  // namespace zm::cli
