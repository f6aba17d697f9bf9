#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <sstream>

#include "commands.hpp"
#include "core/deck.hpp"
#include "core/error.hpp"
#include "core/stage_spec.hpp"
#include "core/zero_mesh.hpp"
#include "model/layout.hpp"
#include "plan/machine.hpp"
#include "plan/plan_extensions.hpp"
#include "plan/planner.hpp"
#include "plan/run_extensions.hpp"
#include "plan/run_options.hpp"
#include "zero/schedule.hpp"
#include "zero/state_tier.hpp"

namespace zm::cli {

namespace {

// --precision: "fp32", "tf32", "bf16", or "mixed" (= bf16).
Precision plan_precision_from_name(const std::string& name) {
  Precision precision = Precision::FP32;
  if (name == "mixed") return Precision::BF16;
  if (!parse_precision(name, precision)) fail("precision '{}': expected fp32 or mixed", name);
  return precision;
}

// One line per collective of unit `unit` (and the step's buckets): role, strategy, group, op,
// count, type, posts per step, where posted and waited, and the posts per forward-only
// micro-batch where it has some. A state tier's own lines follow (StateTier::describe).
std::vector<std::string> describe_schedule(const StepSchedule& schedule, int unit) {
  std::vector<std::string> lines;
  for (const ScheduledCollective& c : schedule.collectives()) {
    // The unit's entries, and those that are the step's whatever the unit: the buckets (stage 0)
    // and the statistics.
    if (c.role != ScheduleRole::Buckets && c.unit >= 0 && c.unit != unit) continue;
    const std::string what = c.unit < 0 ? c.buffer
                             : c.last_unit != c.unit
                                 ? fmt::format("{} of units {}-{}", c.buffer, c.unit, c.last_unit)
                                 : fmt::format("{} of unit {}", c.buffer, c.unit);
    for (const ScheduleHop& hop : c.hops)
      lines.push_back(fmt::format(
          "{:<17} {:<28} {:<18} {:<14} {:>12} x {}B on {:>5} ranks  x{} per step  posted {}, "
          "waited {}  ({}){}",
          schedule_role_name(c.role), c.strategy->name(c),
          hop.added.empty() ? mesh_group_name(hop.group) : hop.added.c_str(),
          comm_op_name(hop.wire.op), hop.wire.count, hop.wire.element_bytes, hop.wire.ranks,
          c.per_step, step_point_name(c.posted), step_point_name(c.waited), what,
          c.per_forward_only > 0
              ? fmt::format("  x{} per forward-only micro-batch", c.per_forward_only)
              : std::string()));
  }
  return lines;
}

// "1,4,16" for --ranks or a plan axis's option: integers >= 1.
std::vector<int64_t> parse_counts(const char* option, const std::string& text) {
  std::vector<int64_t> ranks;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    long long value = 0;
    try {
      value = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || value < 1 || value > (1ll << 40))
      fail("{} {}: '{}' is not a count (expected integers >= 1, comma separated)", option, text,
           item);
    ranks.push_back(value);
  }
  if (ranks.empty()) fail("{}: expected at least one count", option);
  return ranks;
}

std::vector<int> parse_stages(const std::string& text) {
  if (text == "all") return {0, 1, 2, 3};
  if (text.size() == 1 && text[0] >= '0' && text[0] <= '3') return {text[0] - '0'};
  fail("--stage {}: expected 0, 1, 2, 3 or all", text);
}

std::string gb(double bytes) {
  return fmt::format("{:.3f}", bytes / 1e9);
}

// The memory categories' columns, in the enum's order: the CSV name and the table heading. State a
// module keeps in files (MemCategory::Storage) is that module's to price, not a memory column.
struct CategoryColumn {
  const char* csv;
  const char* heading;
  int width;
};
constexpr CategoryColumn kCategoryColumns[] = {{"params_bytes", "params", 10},
                                               {"grads_bytes", "grads", 10},
                                               {"optimizer_bytes", "optimizer", 10},
                                               {"activations_bytes", "activation", 10},
                                               {"comm_buffers_bytes", "commbuf", 9},
                                               {"workspace_bytes", "workspace", 9},
                                               {"host_bytes", "host", 10}};
static_assert(std::size(kCategoryColumns) == static_cast<size_t>(MemCategory::Storage),
              "a column per memory category");

// f(c) for every memory category in order, and after the optimizer's, model_states() (-1).
template <typename F>
void for_each_memory_column(F&& f) {
  for (int c = 0; c < static_cast<int>(MemCategory::Storage); ++c) {
    f(c);
    if (static_cast<MemCategory>(c) == MemCategory::Optimizer) f(-1);
  }
}

// The collectives reported per step, in the CommOp enum's order.
constexpr CommOp kReportedOps[] = {CommOp::AllReduce, CommOp::ReduceScatter, CommOp::AllGather};

bool any_all_to_all(const std::vector<PlanPoint>& points) {
  return std::any_of(points.begin(), points.end(), [](const PlanPoint& p) {
    return p.bytes_per_step[static_cast<int>(CommOp::AllToAll)] > 0;
  });
}

// The fits column: "no" where device memory does not fit, "host" where it does but the node's
// host memory does not, "storage" where those do but the node's storage (a module's drives) is
// too small.
const char* fits_text(const PlanPoint& p) {
  return p.fits ? "yes" : !p.device_fits ? "no" : !p.host_fits ? "host" : "storage";
}

// After the traffic by level, the modules' columns there (plan/plan_extensions.hpp); with
// all-to-alls anywhere, then all_to_all_bytes, and the modules' columns that follow them; then the
// modules' columns at the end.
void print_csv(const Deck& deck, Precision precision, const std::vector<PlanPoint>& points,
               bool have_machine) {
  const bool exchanged = any_all_to_all(points);
  // The modules' columns shown for this deck, by where they go.
  auto module_columns = [&](PlanColumnsAt at) {
    std::vector<const PlanColumns*> out;
    for (const PlanColumns& c : plan_columns())
      if (c.at == at && c.shown(deck, points)) out.push_back(&c);
    return out;
  };
  auto module_header = [&](PlanColumnsAt at) {
    std::string text;
    for (const PlanColumns* c : module_columns(at)) text += c->header;
    return text;
  };
  auto module_row = [&](PlanColumnsAt at, const PlanPoint& p) {
    std::string text;
    for (const PlanColumns* c : module_columns(at)) text += c->row(deck, p, have_machine);
    return text;
  };
  std::string header = "deck,precision,stage,ranks,params,padded_params";
  for_each_memory_column([&](int c) {
    header += ',';
    header += c < 0 ? "model_states_bytes" : kCategoryColumns[c].csv;
  });
  header += ",total_bytes";
  for (CommOp op : kReportedOps) header += fmt::format(",{}_bytes", comm_op_name(op));
  // Columns are only ever appended: scripts read them by name and by position.
  fmt::print(
      "{},compute_s,comm_s,step_overlapped_s,step_serial_s,fits,largest_layers,"
      "largest_params,shard_size,recompute,intra_group_bytes,inter_group_bytes{}{}{}{}{}\n",
      header, module_header(PlanColumnsAt::AfterLevels),
      have_machine ? ",model_flops_per_step,tflops_per_device" +
                         module_header(PlanColumnsAt::AfterThroughput)
                   : "",
      exchanged ? ",all_to_all_bytes" : "", module_header(PlanColumnsAt::AfterAllToAll),
      module_header(PlanColumnsAt::AtEnd));
  for (const PlanPoint& p : points) {
    std::string row = fmt::format("{},{},{},{},{},{}", deck.path, memory_model_name(precision),
                                  p.stage, p.ranks, p.params, p.padded_params);
    for_each_memory_column([&](int c) {
      row += fmt::format(",{:.0f}", c < 0 ? p.memory.model_states() : p.memory.bytes[c]);
    });
    row += fmt::format(",{:.0f}", p.memory.total());
    for (CommOp op : kReportedOps)
      row += fmt::format(",{:.0f}", p.bytes_per_step[static_cast<int>(op)]);
    // Predicted throughput, and what the modules say of it.
    const std::string predicted = have_machine
                                      ? fmt::format(",{:.6g},{:.6g}", p.model_flops_per_step,
                                                    p.predicted_flops_per_second() / 1e12) +
                                            module_row(PlanColumnsAt::AfterThroughput, p)
                                      : "";
    const std::string all_to_all =
        exchanged ? fmt::format(",{:.0f}", p.bytes_per_step[static_cast<int>(CommOp::AllToAll)])
                  : "";
    fmt::print("{},{:.6g},{:.6g},{:.6g},{:.6g},{},{},{},{},{},{:.0f},{:.0f}{}{}{}{}{}\n", row,
               p.compute_seconds, p.comm_seconds, p.step_seconds_overlapped, p.step_seconds_serial,
               have_machine ? fits_text(p) : "", p.largest_layers, p.largest_params,
               p.mesh.group_ranks(), deck.model.recompute, p.bytes_at_level(CommLevel::IntraGroup),
               p.bytes_at_level(CommLevel::InterGroup), module_row(PlanColumnsAt::AfterLevels, p),
               predicted, all_to_all, module_row(PlanColumnsAt::AfterAllToAll, p),
               module_row(PlanColumnsAt::AtEnd, p));
  }
}

void print_heading(const Deck& deck, Precision precision, const PlanPoint& first,
                   const Machine* machine) {
  fmt::print("zeromini plan: {}\n", deck.path);
  fmt::print(
      "  model: {} layers, dim {}, {} heads, vocab {} (padded {}), seq {}; "
      "micro_batch {} x grad_accum {}; recompute {}\n",
      deck.model.layers, deck.model.dim, deck.model.heads, deck.model.vocab,
      deck.model.padded_vocab(), deck.model.seq_len, deck.train.micro_batch, deck.train.grad_accum,
      deck.model.recompute);
  fmt::print("  Psi = {} parameters (real vocabulary)\n", first.params);
  fmt::print("  precision: {}\n",
             !is_mixed(precision)
                 ? "fp32 (4 + 4 + 8 bytes per parameter: parameters, gradients, Adam m and v)"
                 : "mixed (2 + 2 + 12 bytes per parameter: bf16 parameters and gradients; fp32 "
                   "master, m and v)");
  if (machine)
    fmt::print("  machine: {} ({} devices per node, {:.1f} GiB each)\n", machine->name,
               machine->devices_per_node, machine->device_memory_bytes / (1024.0 * 1024 * 1024));
  if (deck.zero.shard_size != 0)
    fmt::print(
        "  hybrid sharding: zero.shard_size = {}: stages 1-3 shard within groups of consecutive "
        "ranks (groups x ranks per group), each group a replica; stage 0 has one group\n",
        shard_size_text(deck.zero.shard_size));
  for (const PlanNote& note : plan_notes()) fmt::print("{}", note(deck));
  fmt::print(
      "\nPer rank, GB (1e9 bytes). Model states = parameters + gradients + optimizer; "
      "traffic = bytes each rank sends per step (ring convention){}.\n",
      deck.zero.shard_size != 0 ? "; intra-grp / inter-grp: of it, within a shard group / across "
                                  "the groups (replicas, step statistics)"
                                : "");
}

// The modules' notes on these points (plan/plan_extensions.hpp), and the points no run could
// launch.
void print_table_notes(const Deck& deck, const std::vector<PlanPoint>& points,
                       const std::vector<std::string>& skipped) {
  for (const PlanTableNote& note : plan_table_notes()) fmt::print("{}", note(deck, points));
  for (const std::string& s : skipped) fmt::print("left out: {}\n", s);
}

// One table line: ranks and stage, then the memory columns | total | traffic.
template <typename MemoryCell, typename TrafficCell>
std::string table_line(const std::string& ranks, const std::string& stage, MemoryCell memory,
                       const std::string& total, TrafficCell traffic) {
  std::string line = fmt::format("{:>8} {:>5} |", ranks, stage);
  for_each_memory_column([&](int c) {
    line += fmt::format(" {:>{}}", memory(c), c < 0 ? 12 : kCategoryColumns[c].width);
    if (c < 0) line += " |";  // model states close the first group
  });
  line += fmt::format(" {:>10} |", total);
  for (CommOp op : kReportedOps) line += fmt::format(" {:>10}", traffic(op));
  return line;
}

void print_table(const std::vector<PlanPoint>& points, const Machine* machine) {
  // The shard layout and the traffic by level only when some point has several groups: with one
  // group every byte is intra-group, and the table keeps the columns scripts already read.
  const bool hybrid =
      std::any_of(points.begin(), points.end(), [](const PlanPoint& p) { return p.mesh.hybrid(); });
  const char* traffic_headings[] = {"allreduce", "reducescat", "allgather"};
  fmt::print("{}", table_line(
                       "ranks", "stage",
                       [](int c) { return c < 0 ? "model-states" : kCategoryColumns[c].heading; },
                       "total", [&](CommOp op) { return traffic_headings[static_cast<int>(op)]; }));
  // The modules' columns shown for these points, after the traffic by level or at the end.
  auto module_columns = [&](PlanTableColumnsAt at) {
    std::vector<const PlanTableColumns*> out;
    for (const PlanTableColumns& c : plan_table_columns())
      if (c.at == at && c.shown(points)) out.push_back(&c);
    return out;
  };
  const auto after_levels = module_columns(PlanTableColumnsAt::AfterLevels);
  const auto after_throughput = module_columns(PlanTableColumnsAt::AfterThroughput);
  const auto at_end = module_columns(PlanTableColumnsAt::AtEnd);
  // The passes' share of the step where a point has compressed collectives.
  const bool quantized = std::any_of(points.begin(), points.end(),
                                     [](const PlanPoint& p) { return p.pass_seconds > 0; });
  const bool exchanged = any_all_to_all(points);  // all-to-alls: a column of their own, last
  if (hybrid) fmt::print(" | {:>9} {:>10} {:>10}", "groups", "intra-grp", "inter-grp");
  for (const PlanTableColumns* c : after_levels) fmt::print("{}", c->heading(machine != nullptr));
  if (machine) {
    fmt::print(" | {:>4} {:>10} {:>10} {:>14} | {:>8}", "fits", "step s ovl", "step s ser",
               "largest fits", "TFLOP/s");
    for (const PlanTableColumns* c : after_throughput) fmt::print("{}", c->heading(true));
  }
  if (machine && quantized) fmt::print(" | {:>10}", "quant s");
  if (exchanged) fmt::print(" | {:>10}", "alltoall");
  for (const PlanTableColumns* c : at_end) fmt::print("{}", c->heading(machine != nullptr));
  fmt::print("\n");
  for (const PlanPoint& p : points) {
    fmt::print("{}",
               table_line(
                   std::to_string(p.ranks), std::to_string(p.stage),
                   [&](int c) { return gb(c < 0 ? p.memory.model_states() : p.memory.bytes[c]); },
                   gb(p.memory.total()),
                   [&](CommOp op) { return gb(p.bytes_per_step[static_cast<int>(op)]); }));
    if (hybrid)
      fmt::print(
          " | {:>9} {:>10} {:>10}", fmt::format("{}x{}", p.mesh.groups(), p.mesh.group_ranks()),
          gb(p.bytes_at_level(CommLevel::IntraGroup)), gb(p.bytes_at_level(CommLevel::InterGroup)));
    for (const PlanTableColumns* c : after_levels)
      fmt::print("{}", c->cells(p, machine != nullptr));
    if (machine)
      fmt::print(" | {:>4} {:>10.4g} {:>10.4g} {:>14}", fits_text(p), p.step_seconds_overlapped,
                 p.step_seconds_serial,
                 p.largest_layers > 0
                     ? fmt::format("L={} {:.3g}B", p.largest_layers, p.largest_params / 1e9)
                     : std::string("none"));
    if (machine) {
      fmt::print(" | {:>8.4g}", p.predicted_flops_per_second() / 1e12);
      for (const PlanTableColumns* c : after_throughput) fmt::print("{}", c->cells(p, true));
    }
    if (machine && quantized) fmt::print(" | {:>10.4g}", p.pass_seconds);
    if (exchanged)
      fmt::print(" | {:>10}", gb(p.bytes_per_step[static_cast<int>(CommOp::AllToAll)]));
    for (const PlanTableColumns* c : at_end) fmt::print("{}", c->cells(p, machine != nullptr));
    fmt::print("\n");
  }
}

void print_machine_note(const Deck& deck, int stage, const Machine& machine) {
  const FlopsPerToken f =
      flops_per_token(deck.model, attention_kernels(run_extensions(deck, stage)));
  fmt::print(
      "\nStep time: compute = {:.4g} hardware FLOP/token ({:.4g} model FLOP/token: 6N + 12 L T C; "
      "the rest is recomputation and vocabulary padding, model/flops.hpp) for the whole model "
      "(each rank does 1/ranks of the global batch's) at the machine's sustained rate; "
      "communication from an alpha-beta ring model, each collective on the intra-node link when "
      "its ring stays in a node, else on the inter-node link at k x the per-device rate for k of "
      "its "
      "ranks in each node (one ring per network card), at most the intra-node rate, and an "
      "all-to-all at the per-device rate; 'ovl' assumes full overlap, 'ser' "
      "none. 'largest fits': the deepest model of this width, heads, vocabulary and batch whose "
      "per-rank total fits the device memory.\n",
      f.hardware(), f.model());
  std::string throughput;
  for (const PlanThroughputNote& note : plan_throughput_notes()) throughput += note(deck, machine);
  fmt::print("Predicted throughput: TFLOP/s = model FLOPs per device / overlapped step time{}.\n",
             throughput);
}

}  // namespace

namespace {

// The deck at every point of the plan's axes (plan/plan_extensions.hpp), the first axis
// outermost: each axis at the values its option lists, or at the deck's own; and each point's
// values as "NAME VALUE, ...".
struct AxisPoints {
  std::vector<Deck> decks;
  std::vector<std::string> labels;
};
AxisPoints axis_points(const Deck& deck, const std::vector<std::string>& options) {
  AxisPoints out{{deck}, {""}};
  for (size_t i = 0; i < plan_axes().size(); ++i) {
    const PlanAxis& axis = plan_axes()[i];
    const std::vector<int64_t> values = i >= options.size() || options[i].empty()
                                            ? std::vector<int64_t>{axis.value(deck)}
                                            : parse_counts(axis.option.c_str(), options[i]);
    AxisPoints next;
    for (size_t d = 0; d < out.decks.size(); ++d)
      for (int64_t value : values) {
        next.decks.push_back(axis.at(out.decks[d], value));
        next.labels.push_back(fmt::format("{}{}{} {}", out.labels[d],
                                          out.labels[d].empty() ? "" : ", ", axis.name, value));
      }
    out = std::move(next);
  }
  return out;
}

// Every ranks x axis point x stage point, with the deck it was priced at; a point whose
// model-parallel groups do not divide a rank count is left out (noted in `skipped`), and with
// nothing left the reason is the error.
std::vector<PlanPoint> plan_points(const AxisPoints& axes, const std::vector<int64_t>& ranks,
                                   const std::vector<int>& stages, const Machine* machine,
                                   std::vector<Deck>& decks, std::vector<std::string>& skipped) {
  std::string names, options, what;
  for (const PlanAxis& axis : plan_axes()) {
    names += (names.empty() ? "" : " x ") + axis.name;
    options += (options.empty() ? "" : ", ") + axis.option;
    what += (what.empty() ? "" : " x ") + axis.what;
  }
  std::vector<PlanPoint> points;
  for (int64_t n : ranks)
    for (size_t a = 0; a < axes.decks.size(); ++a) {
      const Deck& d = axes.decks[a];
      if (n % model_parallel_size(d) != 0) {
        skipped.push_back(
            fmt::format("{} ranks at {} ({} must divide the ranks)", n, axes.labels[a], names));
        continue;
      }
      for (int s : stages) {
        points.push_back(plan_point(d, s, n, machine));
        decks.push_back(d);
      }
    }
  if (points.empty()) fail("{}: no {} divides a rank count", options, what);
  return points;
}

}  // namespace

// --schedule: the collectives of one step for a block (unit 1; unit 0 in a model of one unit) at
// each point, as the engine posts them (zero/schedule.hpp); the stage 0 buckets cover every unit.
void print_schedules(const std::vector<Deck>& decks, const std::vector<PlanPoint>& points) {
  fmt::print(
      "\nStep schedule per rank (ARCHITECTURE.md, \"The step's schedule\"): role, strategy, "
      "group, collective, elements x bytes on ranks, posts per step, where posted and "
      "waited\n");
  for (size_t i = 0; i < points.size(); ++i) {
    const PlanPoint& point = points[i];
    const Deck& deck = decks[i];
    const ParamLayout layout = run_layout(deck, point.stage);
    const Partition partition(layout, point.mesh.group_ranks(), point.mesh.sub_shards());
    const int unit = std::min(1, partition.num_units() - 1);
    const StageSpec& spec = stage_spec(point.stage);
    const ZeroOptions zero = zero_options(deck, point.stage, point.mesh);
    const StepSchedule schedule = build_step_schedule(spec, partition, zero, point.mesh);
    fmt::print("  {} ranks, stage {}, unit {} ({}):\n", point.ranks, point.stage, unit,
               layout.unit(unit).name);
    std::vector<std::string> lines = describe_schedule(schedule, unit);
    if (zero.tier)  // the tier's own entries (its copies between the memories)
      for (std::string& line :
           zero.tier->describe(spec, schedule_context(spec, partition, zero, point.mesh),
                               schedule.collectives(), unit))
        lines.push_back(std::move(line));
    for (const std::string& line : lines) fmt::print("    {}\n", line);
  }
}

int plan(const PlanOptions& options) {
  Deck deck = load_deck(options.deck, options.overrides, BuildChecks::Skip);
  const std::vector<int> stages = parse_stages(options.stage);
  // --precision prices the deck as if it asked for that precision.
  if (!options.precision.empty())
    deck.train.precision = plan_precision_from_name(options.precision);
  const Precision precision = deck.train.precision;
  Machine machine;
  const bool have_machine = !options.machine.empty();
  if (have_machine) machine = load_machine(options.machine);
  if (options.format != "table" && options.format != "csv")
    fail("--format {}: expected table or csv", options.format);
  const AxisPoints axes = axis_points(deck, options.axis_values);
  // A module's mode of plan, where its flag was given (plan/plan_extensions.hpp).
  for (size_t m = 0; m < options.modes.size(); ++m) {
    if (!*options.modes[m]) continue;
    auto ranks = [&] {
      return options.ranks.empty() ? std::vector<int64_t>{}
                                   : parse_counts("--ranks", options.ranks);
    };
    return plan_modes()[m]->run(
        {axes.decks, have_machine ? &machine : nullptr, ranks, stages, options.format});
  }
  for (const auto& mode : plan_modes()) mode->check_unused();
  std::vector<std::string> skipped;
  std::vector<Deck> decks;
  const std::vector<PlanPoint> points =
      plan_points(axes, parse_counts("--ranks", options.ranks.empty() ? "1" : options.ranks),
                  stages, have_machine ? &machine : nullptr, decks, skipped);

  if (options.format == "csv") {
    print_csv(deck, precision, points, have_machine);
    return 0;
  }
  print_heading(deck, precision, points.front(), have_machine ? &machine : nullptr);
  print_table_notes(deck, points, skipped);
  print_table(points, have_machine ? &machine : nullptr);
  for (const PlanFootnote& note : plan_footnotes(PlanFootnoteAt::AfterTable))
    fmt::print("{}", note(points, have_machine ? &machine : nullptr));
  if (have_machine) print_machine_note(deck, stages.front(), machine);
  for (const PlanFootnote& note : plan_footnotes(PlanFootnoteAt::AtEnd))
    fmt::print("{}", note(points, have_machine ? &machine : nullptr));
  if (options.schedule) print_schedules(decks, points);
  return 0;
}

}  // namespace zm::cli
