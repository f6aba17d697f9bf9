// A sweep's points, and the checks of a sweep file that need no TOML.
#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "core/stage_spec.hpp"
#include "sweep_file.hpp"

namespace zm::cli {

namespace {

constexpr double kMaxPoints = 100000;
const std::string kLower = "abcdefghijklmnopqrstuvwxyz_";
const std::string kWord = kLower + "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

bool only(const std::string& text, const std::string& allowed) {
  return !text.empty() && text.find_first_not_of(allowed) == std::string::npos;
}

// Why a point cannot run with its tp degree and shard size, or "": tp must divide the ranks, and
// stages 1-3 a shard size that divides the data-parallel ranks (ranks / tp; "node" divides them:
// the launcher places ranks_per_node ranks on each node). Stage "all" runs stages that shard.
std::string shard_problem(const SweepPoint& point) {
  const int64_t tp = point.tp.empty() ? 1 : std::stoll(point.tp);
  if (point.ranks % tp != 0)
    return fmt::format("parallel.tp = {} does not divide {} ranks", tp, point.ranks);
  const bool shards = point.stage == kAllStages || stage_spec(point.stage).shards_states();
  if (!shards || point.shard_size.empty() || point.shard_size == "node") return "";
  const int64_t size = std::stoll(point.shard_size), data_parallel = point.ranks / tp;
  if (size == 0 || data_parallel % size == 0) return "";
  return fmt::format("zero.shard_size = {} does not divide {} {}ranks", size, data_parallel,
                     tp > 1 ? "data-parallel " : "");
}

// The point at these coordinates (model, stage, nodes, ranks per node, deck axes and repeat set).
SweepPoint make_point(const Sweep& sweep, SweepPoint point) {
  const SweepModel& model = *point.model;
  point.ranks = point.nodes * point.ranks_per_node;
  std::string axes;
  if (!point.shard_size.empty()) axes += "-shard" + point.shard_size;
  if (!point.recompute.empty()) axes += "-rc" + point.recompute;
  if (!point.tp.empty()) axes += "-tp" + point.tp;
  point.name = fmt::format("{}-s{}-n{}x{}-{}{}-r{}", sweep.name, stage_name(point.stage),
                           point.nodes, point.ranks_per_node, model.name, axes, point.repeat);
  point.overrides = model.set;
  point.overrides.insert(point.overrides.end(), sweep.set.begin(), sweep.set.end());
  point.overrides.push_back("zero.stage=" + stage_name(point.stage));
  if (!point.shard_size.empty()) point.overrides.push_back("zero.shard_size=" + point.shard_size);
  if (!point.recompute.empty()) point.overrides.push_back("model.recompute=" + point.recompute);
  if (!point.tp.empty()) point.overrides.push_back("parallel.tp=" + point.tp);
  if (sweep.steps) point.overrides.push_back(fmt::format("train.steps={}", *sweep.steps));
  point.micro_batch = sweep.micro_batch;
  if (sweep.scaling == "strong") {
    // Strong scaling: the global batch is divided among the ranks.
    if (*sweep.global_batch % point.ranks != 0)
      point.problem = fmt::format("global_batch = {} is not divisible by {} ranks",
                                  *sweep.global_batch, point.ranks);
    point.micro_batch = *sweep.global_batch / point.ranks;
  }
  if (point.micro_batch)
    point.overrides.push_back(fmt::format("train.micro_batch={}", *point.micro_batch));
  if (point.problem.empty()) point.problem = shard_problem(point);
  return point;
}

// An axis's values, or one empty value (no such axis).
const std::vector<std::string>& values_or_none(const std::vector<std::string>& values) {
  static const std::vector<std::string> none = {""};
  return values.empty() ? none : values;
}

}  // namespace

const SweepAxis kShardAxis{"shard_sizes",
                           "zero.shard_size",
                           "a shard size (an integer >= 0, 0 = all ranks, or \"node\")",
                           1000000000,  // the deck schema's bound
                           {"node"}};
const SweepAxis kRecomputeAxis{"recompute",
                               "model.recompute",
                               "an activation recomputation mode (\"none\" or \"blocks\")",
                               -1,
                               {"none", "blocks"}};
const SweepAxis kTpAxis{
    "tp", "parallel.tp", "a tensor-parallel degree (an integer >= 1)", 1 << 20, {}, 1};

std::vector<SweepPoint> expand_sweep(const Sweep& sweep) {
  std::vector<SweepPoint> points;
  SweepPoint at;
  for (const SweepModel& model : sweep.models)
    for (int64_t nodes : sweep.nodes)
      for (int64_t ranks_per_node : sweep.ranks_per_node)
        for (int stage : sweep.stages)
          for (const std::string& shard_size : values_or_none(sweep.shard_sizes))
            for (const std::string& recompute : values_or_none(sweep.recompute))
              for (const std::string& tp : values_or_none(sweep.tp))
                for (int64_t repeat = 0; repeat < sweep.repeats; ++repeat) {
                  at.model = &model;
                  at.stage = stage;
                  at.nodes = nodes;
                  at.ranks_per_node = ranks_per_node;
                  at.shard_size = shard_size;
                  at.recompute = recompute;
                  at.tp = tp;
                  at.repeat = repeat;
                  points.push_back(make_point(sweep, at));
                }
  return points;
}

std::string stage_name(int stage) {
  return stage == kAllStages ? "all" : std::to_string(stage);
}

bool is_name(const std::string& text, const std::string& punctuation) {
  return only(text, kWord + punctuation);
}

bool is_override(const std::string& text) {
  const size_t dot = text.find('.'), equals = text.find('=');
  if (dot == std::string::npos || equals == std::string::npos || dot > equals) return false;
  return only(text.substr(0, dot), kLower) &&
         only(text.substr(dot + 1, equals - dot - 1), kLower) &&
         text.find('\n') == std::string::npos;
}

bool is_variable_name(const std::string& text) {
  return only(text, kWord) && (text[0] < '0' || text[0] > '9');
}

std::string override_of(const Sweep& sweep, const std::string& deck_key) {
  std::vector<std::string> sets = sweep.set;
  for (const SweepModel& model : sweep.models)
    sets.insert(sets.end(), model.set.begin(), model.set.end());
  const std::string prefix = deck_key + "=";
  for (const std::string& set : sets)
    if (set.compare(0, prefix.size(), prefix) == 0) return set;
  return "";
}

void check_sweep_size(const Sweep& sweep, const std::string& path) {
  const Sweep& s = sweep;
  const double points = static_cast<double>(s.models.size()) * s.nodes.size() *
                        s.ranks_per_node.size() * s.stages.size() * s.repeats *
                        std::max<size_t>(1, s.shard_sizes.size()) *
                        std::max<size_t>(1, s.recompute.size()) * std::max<size_t>(1, s.tp.size());
  if (points > kMaxPoints)
    fail(
        "{}: {:.0f} points (models x nodes x ranks_per_node x stages x shard_sizes x recompute "
        "x tp x repeats): at most {:.0f}",
        path, points, kMaxPoints);
}

}  // namespace zm::cli
