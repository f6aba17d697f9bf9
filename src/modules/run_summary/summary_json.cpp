#include "modules/run_summary/summary_json.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>

#include "core/build_info.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "io/durable_file.hpp"
#include "io/run_report.hpp"
#include "modules/provenance/manifest.hpp"

namespace zm {

namespace {

std::string json_number(double value) {
  if (!std::isfinite(value)) return "null";
  return fmt::format("{}", value);
}

std::string json_list(const std::vector<std::string>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + quoted(values[i]);
  return out + "]";
}

// The run's manifest (the provenance module's), as results.h5's /manifest holds it.
std::string manifest_json(const RunManifest& m) {
  std::string out = "{\n";
  auto field = [&](const char* key, const std::string& value) {
    out += fmt::format("    \"{}\": {},\n", key, value);
  };
  field("deck_path", quoted(m.deck_path));
  field("zeromini_version", quoted(m.zeromini_version));
  field("git_revision", quoted(m.git_revision));
  field("kokkos_version", quoted(m.kokkos_version));
  field("kokkos_backends", quoted(m.kokkos_backends));
  field("mpi_library", quoted(m.mpi_library));
  field("nccl_version", quoted(m.nccl_version));
  field("hdf5_version", quoted(m.hdf5_version));
  field("hostnames", json_list(m.hostnames));
  field("device_names", json_list(m.device_names));
  field("ranks", std::to_string(m.ranks));
  field("nodes", std::to_string(m.nodes));
  for (const auto& [name, size] : m.model_dimensions) field(name.c_str(), std::to_string(size));
  field("data_parallel", std::to_string(m.data_parallel));
  out += fmt::format("    \"deck\": {}\n  }}", quoted(m.deck));
  return out;
}

// Memory: the largest peak over ranks, per category.
std::string memory_json(const StageResult& s) {
  std::string out = "      \"memory_peak_bytes_max_over_ranks\": {";
  for (int c = 0; c < kMemCategories; ++c) {
    size_t worst = 0;
    for (const MemoryFigures& f : s.memory_by_rank)
      worst = std::max(worst, f.peak[static_cast<size_t>(c)]);
    out += fmt::format("{}\"{}\": {}", c ? ", " : "",
                       mem_category_name(static_cast<MemCategory>(c)), worst);
  }
  size_t worst_total = 0;
  for (const MemoryFigures& f : s.memory_by_rank) worst_total = std::max(worst_total, f.peak_total);
  // "total": of the device categories (host memory is not device memory).
  return out + fmt::format(", \"total\": {}}},\n", worst_total);
}

// Bytes per rank per step for each collective, under one key.
std::string traffic_json(const char* key, const CommStats& per_step) {
  std::string out = fmt::format("      \"{}\": {{", key);
  for (int op = 0; op < kCommOps; ++op)
    out += fmt::format("{}\"{}\": {}", op ? ", " : "", comm_op_name(static_cast<CommOp>(op)),
                       json_number(per_step.ops[static_cast<size_t>(op)].bytes));
  return out + "},\n";
}

// The members the stage's figures add to `object` (io/stage_figures.hpp), in their order.
std::vector<std::string> module_members(const StageResult& s, SummaryObject object) {
  std::vector<std::string> out;
  for (const auto& f : s.figures)
    for (std::string& member : f->summary_members(object)) out.push_back(std::move(member));
  return out;
}

// Throughput over the timed steps (train/throughput.hpp), then the stage's figures' members (the
// mfu module's: MFU and its peak, null without one).
std::string throughput_json(const StageResult& s) {
  const Throughput& t = s.throughput;
  std::vector<std::string> fields;
  auto field = [&](const char* key, const std::string& value) {
    fields.push_back(fmt::format("\"{}\": {}", key, value));
  };
  field("tokens_per_second", json_number(t.tokens_per_second));
  field("step_seconds", json_number(t.step_seconds));
  field("model_flops_per_token", json_number(t.model_flops_per_token));
  field("hardware_flops_per_token", json_number(t.hardware_flops_per_token));
  field("model_flops_per_step", json_number(t.model_flops_per_step));
  field("hardware_flops_per_step", json_number(t.hardware_flops_per_step));
  field("tflops_per_device", json_number(t.tflops_per_device));
  field("tflops_total", json_number(t.tflops_total));
  field("hardware_tflops_per_device", json_number(t.hardware_tflops_per_device));
  for (std::string& member : module_members(s, SummaryObject::Throughput))
    fields.push_back(std::move(member));
  std::string out = "      \"throughput\": {";
  for (size_t i = 0; i < fields.size(); ++i) out += (i ? ", " : "") + fields[i];
  return out + "}";
}

std::string stage_json(const StageResult& s) {
  std::string out = "    {\n";
  out += fmt::format("      \"stage\": {},\n      \"ranks\": {},\n", s.stage, s.ranks);
  out += fmt::format("      \"params\": {},\n      \"padded_params\": {},\n", s.param_count,
                     s.padded_param_count);
  out += fmt::format("      \"steps\": {},\n", s.steps.size());
  out += fmt::format("      \"first_step\": {},\n      \"last_step\": {},\n",
                     s.steps.empty() ? 0 : s.steps.front().step + 1,
                     s.steps.empty() ? 0 : s.steps.back().step + 1);
  out +=
      fmt::format("      \"stopped_non_finite\": {},\n", s.stopped_non_finite ? "true" : "false");
  out += fmt::format("      \"tokens_per_rank_per_step\": {},\n", s.tokens_per_rank_per_step);
  out += fmt::format("      \"tokens_per_second_per_rank\": {},\n",
                     json_number(s.tokens_per_second_per_rank));
  out += fmt::format("      \"final_loss\": {},\n",
                     json_number(s.steps.empty() ? NAN : s.steps.back().loss));
  out += fmt::format(
      "      \"time_seconds\": {{\"step\": {}, \"forward\": {}, \"backward\": {}, "
      "\"comm_wait\": {}, \"optimizer\": {}}},\n",
      json_number(s.mean_times.total), json_number(s.mean_times.forward),
      json_number(s.mean_times.backward), json_number(s.mean_times.comm_wait),
      json_number(s.mean_times.optimizer));
  out += memory_json(s);
  out += traffic_json("bytes_per_rank_per_step", s.comm_per_step);
  // Hybrid sharding: the ranks per shard group, and the traffic that crossed groups.
  out += fmt::format("      \"shard_size\": {},\n", s.shard_size);
  out += traffic_json("bytes_per_rank_per_step_inter_group", s.comm_inter_group_per_step);
  out += throughput_json(s);
  for (const std::string& member : module_members(s, SummaryObject::Stage)) out += ",\n" + member;
  return out + "\n";
}

}  // namespace

void write_summary_json(const std::string& path, const Deck& deck, const RunOutcome& outcome,
                        const RunPlacement& placement) {
  const std::vector<StageResult>& results = outcome.stages;
  std::string out = "{\n";
  // How the run ended (run_end_name): completed, terminated (a stop signal, after a checkpoint:
  // resumable), terminated_unsaved, terminated_before_start or stopped_non_finite.
  out += fmt::format("  \"end\": \"{}\",\n", run_end_name(outcome.end));
  out += fmt::format("  \"nodes\": {},\n", placement.nodes);
  out += fmt::format("  \"threads_per_rank\": {},\n", placement.threads_per_rank);
  out += fmt::format("  \"deck\": {},\n", quoted(deck.path));
  out += fmt::format("  \"zeromini_revision\": {},\n", quoted(git_revision()));
  out += fmt::format("  \"manifest\": {},\n", manifest_json(run_manifest()));
  out += fmt::format(
      "  \"model\": {{\"layers\": {}, \"heads\": {}, \"dim\": {}, \"vocab\": {}, "
      "\"seq_len\": {}}},\n",
      deck.model.layers, deck.model.heads, deck.model.dim, deck.model.vocab, deck.model.seq_len);
  out += fmt::format("  \"micro_batch\": {},\n  \"grad_accum\": {},\n", deck.train.micro_batch,
                     deck.train.grad_accum);
  out += "  \"stages\": [\n";
  for (size_t i = 0; i < results.size(); ++i)
    out += stage_json(results[i]) + fmt::format("    }}{}\n", i + 1 < results.size() ? "," : "");
  out += "  ],\n";
  const StageResult* last = results.empty() ? nullptr : &results.back();
  // What the modules say of the whole run (io/run_report.hpp).
  for (const RunReport& report : run_reports())
    if (report.summary_members)
      for (const std::string& member : report.summary_members(deck, results))
        out += "  " + member + ",\n";
  out += fmt::format(
      "  \"figure_of_merit\": {{\"name\": \"tokens per second per rank\", "
      "\"value\": {}}}\n",
      json_number(last ? last->tokens_per_second_per_rank : NAN));
  // Under a temporary name, fsync'ed and renamed, so a reader never sees half a file.
  const std::string error = write_file_durably(path, out + "}\n");
  if (!error.empty()) fail("{}: cannot write the summary: {}", path, error);
}

}  // namespace zm
