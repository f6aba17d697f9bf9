// zeromini sweep expand: a sweep file, checked and expanded into its points, printed as JSON for
// scripts/sweep.py.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commands.hpp"
#include "core/text.hpp"
#include "sweep_file.hpp"

namespace zm::cli {

namespace {

using Fields = std::vector<std::pair<std::string, std::string>>;  // key, value as JSON

std::string json(const std::string& text) {
  return zm::quoted(text);
}
std::string json(int64_t value) {
  return std::to_string(value);
}
std::string json(const std::optional<int64_t>& value) {
  return value ? json(*value) : "null";
}
std::string json_or_null(const std::string& text) {
  return text.empty() ? "null" : json(text);
}
std::string json_stage(int stage) {
  return stage == kAllStages ? json(stage_name(stage)) : std::to_string(stage);
}
// A shard size as the deck takes it: a number, "node", or null (no shard_sizes axis).
std::string json_shard_size(const std::string& size) {
  return size.empty() ? "null" : size == "node" ? json(size) : size;
}

std::string list(const std::vector<std::string>& values) {
  return fmt::format("[{}]", fmt::join(values, ", "));
}
template <typename T>
std::string json_list(const std::vector<T>& items) {
  std::vector<std::string> values;
  for (const T& item : items) values.push_back(json(item));
  return list(values);
}

// An object on one line, or with a field per line indented by `indent` spaces.
std::string object(const Fields& fields, int indent = -1) {
  std::vector<std::string> members;
  for (const auto& [key, value] : fields) members.push_back(json(key) + ": " + value);
  if (indent < 0) return fmt::format("{{{}}}", fmt::join(members, ", "));
  const std::string pad(static_cast<size_t>(indent), ' ');
  return fmt::format("{{\n{}  {}\n{}}}", pad, fmt::join(members, ",\n" + pad + "  "), pad);
}

std::string slurm_json(const SweepSlurm& slurm) {
  Fields env;
  for (const auto& [name, value] : slurm.env) env.emplace_back(name, json(value));
  return object({{"partition", json(slurm.partition)},
                 {"time", json(slurm.time)},
                 {"account", json(slurm.account)},
                 {"qos", json(slurm.qos)},
                 {"constraint", json(slurm.constraint)},
                 {"template", json_or_null(slurm.job_template)},
                 {"launcher", json(slurm.launcher)},
                 {"srun_mpi", json(slurm.srun_mpi)},
                 {"extra", json_list(slurm.extra)},
                 {"env", object(env)}},
                4);
}

std::string sweep_json(const Sweep& sweep) {
  std::vector<std::string> stages, models, shard_sizes;
  for (int stage : sweep.stages) stages.push_back(json_stage(stage));
  for (const std::string& size : sweep.shard_sizes) shard_sizes.push_back(json_shard_size(size));
  for (const SweepModel& model : sweep.models)
    models.push_back(object(
        {{"name", json(model.name)}, {"set", json_list(model.set)}, {"deck", json(model.deck)}}));
  return object({{"name", json(sweep.name)},
                 {"description", json(sweep.description)},
                 {"deck", json(sweep.deck)},
                 {"stages", list(stages)},
                 {"nodes", json_list(sweep.nodes)},
                 {"ranks_per_node", json_list(sweep.ranks_per_node)},
                 {"repeat", json(sweep.repeats)},
                 {"steps", json(sweep.steps)},
                 {"scaling", json(sweep.scaling)},
                 {"micro_batch", json(sweep.micro_batch)},
                 {"global_batch", json(sweep.global_batch)},
                 {"set", json_list(sweep.set)},
                 {"shard_sizes", list(shard_sizes)},
                 {"recompute", json_list(sweep.recompute)},
                 {"tp", list(sweep.tp)},
                 {"quantize_weights", json_list(sweep.quantize_weights)},
                 {"quantize_grads", json_list(sweep.quantize_grads)},
                 {"error_feedback", list(sweep.error_feedback)},
                 {"models", list(models)},
                 {"slurm", slurm_json(sweep.slurm)},
                 {"local", object({{"launcher", json(sweep.local_launcher)}})}},
                2);
}

// The fields of scripts/sweep.py's point.json (less what it adds: binary, job script, jobs).
std::string point_json(const Sweep& sweep, const SweepPoint& point) {
  return object({{"sweep", json(sweep.name)},
                 {"name", json(point.name)},
                 {"deck", json(point.model->deck)},
                 {"model", json(point.model->name)},
                 {"stage", json_stage(point.stage)},
                 {"nodes", json(point.nodes)},
                 {"ranks_per_node", json(point.ranks_per_node)},
                 {"ranks", json(point.ranks)},
                 {"repeat", json(point.repeat)},
                 {"shard_size", json_shard_size(point.shard_size)},
                 {"recompute", json_or_null(point.recompute)},
                 {"tp", point.tp.empty() ? "null" : point.tp},
                 {"quantize_weights", json_or_null(point.quantize_weights)},
                 {"quantize_grads", json_or_null(point.quantize_grads)},
                 {"error_feedback", point.error_feedback.empty() ? "null" : point.error_feedback},
                 {"scaling", json(sweep.scaling)},
                 {"global_batch", json(sweep.global_batch)},
                 {"micro_batch", json(point.micro_batch)},
                 {"steps", json(sweep.steps)},
                 {"overrides", json_list(point.overrides)},
                 {"problem", json_or_null(point.problem)}});
}

}  // namespace

int sweep_expand(const SweepOptions& options) {
  const Sweep sweep = read_sweep(options.file, options.root);
  std::vector<std::string> points;
  for (const SweepPoint& point : expand_sweep(sweep))
    points.push_back("    " + point_json(sweep, point));
  fmt::print("{{\n  \"sweep\": {},\n  \"points\": [\n{}\n  ]\n}}\n", sweep_json(sweep),
             fmt::join(points, ",\n"));
  return 0;
}

}  // namespace zm::cli
