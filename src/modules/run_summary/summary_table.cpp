#include "modules/run_summary/summary_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>

#include "core/text.hpp"
#include "io/run_report.hpp"

namespace zm {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// A stage's cells before the memory columns: the core's, each module's after the one it names.
struct Cell {
  std::string heading;
  int width;
  std::string text;
};

std::vector<Cell> cells_of(const StageResult& s) {
  std::vector<Cell> out = {{"stage", 5, fmt::format("{}", s.stage)},
                           {"tok/s/rank", 12, thousands(s.tokens_per_second_per_rank)},
                           {"step ms", 9, fmt::format("{:.1f}", s.mean_times.total * 1e3)},
                           {"fwd", 8, fmt::format("{:.1f}", s.mean_times.forward * 1e3)},
                           {"bwd", 8, fmt::format("{:.1f}", s.mean_times.backward * 1e3)},
                           {"comm", 8, fmt::format("{:.1f}", s.mean_times.comm_wait * 1e3)},
                           {"opt", 8, fmt::format("{:.1f}", s.mean_times.optimizer * 1e3)}};
  for (const auto& f : s.figures)
    for (const TableColumn& c : f->table_columns()) {
      auto after =
          std::find_if(out.begin(), out.end(), [&](const Cell& o) { return o.heading == c.after; });
      out.insert(after == out.end() ? out.end() : after + 1, {c.heading, c.width, c.cell});
    }
  return out;
}

// Each category's peak, and the total's, at their largest over ranks.
MemoryFigures largest_over_ranks(const std::vector<MemoryFigures>& by_rank) {
  MemoryFigures worst;
  for (const MemoryFigures& f : by_rank) {
    for (size_t c = 0; c < worst.peak.size(); ++c)
      worst.peak[c] = std::max(worst.peak[c], f.peak[c]);
    worst.peak_total = std::max(worst.peak_total, f.peak_total);
  }
  return worst;
}

// Hybrid sharding: how much of each stage's traffic crossed shard groups (the rest stayed in one).
std::string inter_group_traffic(const std::vector<StageResult>& results) {
  std::string out;
  for (const StageResult& s : results) {
    if (s.shard_size >= s.ranks / s.model_parallel) continue;
    double inter = 0, total = 0;
    for (int op = 0; op < kCommOps; ++op) {
      inter += s.comm_inter_group_per_step.ops[static_cast<size_t>(op)].bytes;
      total += s.comm_per_step.ops[static_cast<size_t>(op)].bytes;
    }
    out += fmt::format(
        "  stage {}: {} shard groups of {} ranks; {:.3f} MiB per rank per step within a group, "
        "{:.3f} MiB across groups\n",
        s.stage, s.ranks / s.model_parallel / s.shard_size, s.shard_size, (total - inter) / kMiB,
        inter / kMiB);
  }
  return out;
}

// The stage's line under "Throughput", e.g. "stage 3: 12,345 tokens/s on 2 ranks, 0.61 TFLOP/s per
// device (1.22 in total; ...)", and what the stage's figures add to it (the mfu module's ", MFU
// 4.1% of 15 TFLOP/s (--peak-tflops 15)").
std::string throughput_line(const StageResult& s) {
  const Throughput& t = s.throughput;
  std::string line = fmt::format(
      "stage {}: {} tokens/s on {} ranks, {:.4g} TFLOP/s per device ({:.4g} in total; model "
      "FLOPs, {:.4g} per token)",
      s.stage, thousands(t.tokens_per_second), s.ranks, t.tflops_per_device, t.tflops_total,
      t.model_flops_per_token);
  for (const auto& f : s.figures) line += f->throughput_line_end();
  return line;
}

}  // namespace

std::string summary_table(const Deck& deck, const std::vector<StageResult>& results) {
  if (results.empty()) return "";
  std::string out = fmt::format(
      "\nSummary: {} ranks, {} (real vocabulary) parameters, {} tokens per rank per step; "
      "times are means over the timed steps, memory is the largest over ranks\n",
      results.front().ranks, thousands(static_cast<double>(results.front().param_count)),
      thousands(static_cast<double>(results.front().tokens_per_rank_per_step)));
  // Memory columns in the MemCategory enum's order: the device's, the peak of their total, then
  // host memory (model state kept there), which is not in that total, and where a run keeps
  // model state in files (MemCategory::Storage), their bytes.
  constexpr const char* kMemoryHeadings[] = {"params", "grads", "optim", "activ",  "commbuf",
                                             "work",   "peak",  "host",  "storage"};
  static_assert(std::size(kMemoryHeadings) == kMemCategories + 1, "a heading per memory category");
  const auto storage_of = [](const StageResult& s) {
    return largest_over_ranks(s.memory_by_rank).peak[static_cast<size_t>(MemCategory::Storage)];
  };
  const bool storage = std::any_of(results.begin(), results.end(),
                                   [&](const StageResult& s) { return storage_of(s) > 0; });
  const int memory_columns = static_cast<int>(std::size(kMemoryHeadings)) - (storage ? 0 : 1);
  constexpr CommOp kReportedOps[] = {CommOp::AllReduce, CommOp::ReduceScatter, CommOp::AllGather};
  const std::vector<Cell> columns = cells_of(results.front());
  std::string heading, blanks;
  for (size_t i = 0; i < columns.size(); ++i) {
    heading += fmt::format("{}{:>{}}", i ? " " : "", columns[i].heading, columns[i].width);
    blanks += fmt::format("{}{:>{}}", i ? " " : "", "", columns[i].width);
  }
  heading += " |";
  for (int i = 0; i < memory_columns; ++i) heading += fmt::format(" {:>9}", kMemoryHeadings[i]);
  heading += fmt::format(" | {:>10} {:>10} {:>10}", "allreduce", "reducescat", "allgather");
  out += heading + "\n";
  out += fmt::format("{} | {:>{}} | {:>32}\n", blanks, "MiB per rank (peak)",
                     10 * memory_columns - 1, "MiB moved per rank per step");
  for (const StageResult& s : results) {
    const MemoryFigures worst = largest_over_ranks(s.memory_by_rank);
    auto mib = [](size_t bytes) { return static_cast<double>(bytes) / kMiB; };
    std::string line;
    const std::vector<Cell> cells = cells_of(s);
    for (size_t i = 0; i < cells.size(); ++i)
      line += fmt::format("{}{:>{}}", i ? " " : "", cells[i].text, cells[i].width);
    line += " |";
    for (int c = 0; c < kMemCategories; ++c)
      if (on_device(MemCategory(c))) line += fmt::format(" {:>9.2f}", mib(worst.peak[c]));
    line += fmt::format(" {:>9.2f}", mib(worst.peak_total));
    line += fmt::format(" {:>9.2f}", mib(worst.peak[static_cast<size_t>(MemCategory::Host)]));
    if (storage) line += fmt::format(" {:>9.2f}", mib(storage_of(s)));
    line += " |";
    for (CommOp op : kReportedOps)
      line += fmt::format(" {:>10.3f}", s.comm_per_step[op].bytes / kMiB);
    out += line + "\n";
  }
  out += inter_group_traffic(results);
  for (const StageResult& s : results)
    for (const auto& f : s.figures) out += f->table_note();
  std::string notes;
  for (const auto& f : results.front().figures)
    if (!f->throughput_heading().empty()) notes += "; " + f->throughput_heading();
  out += fmt::format("\nThroughput (model FLOPs = 6N + 12 L T C per token{}):\n", notes);
  for (const StageResult& s : results) out += "  " + throughput_line(s) + "\n";
  // What the modules say of the whole run after it (io/run_report.hpp).
  for (const RunReport& report : run_reports())
    if (report.after_throughput) out += report.after_throughput(deck, results);
  return out;
}

}  // namespace zm
