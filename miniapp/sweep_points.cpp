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

// A deck axis of the points: the sweep's values, the point's value, the part of a point's name
// before the value, and what the sweep file calls it.
// Member pointers through aliases: nvcc's front end rewrites a member-pointer declarator with
// parentheses that GCC then warns about (-Wparentheses).
using SweepValues = const std::vector<std::string> Sweep::*;
using PointValue = std::string SweepPoint::*;
struct DeckAxis {
  SweepValues values;
  PointValue value;
  const char* name_part;
  const SweepAxis* spec;
};
// In the points' order and that of their names and overrides.
const DeckAxis kDeckAxes[] = {
    {&Sweep::shard_sizes, &SweepPoint::shard_size, "-shard", &kShardAxis},
    {&Sweep::recompute, &SweepPoint::recompute, "-rc", &kRecomputeAxis},
    {&Sweep::tp, &SweepPoint::tp, "-tp", &kTpAxis},
    {&Sweep::quantize_weights, &SweepPoint::quantize_weights, "-qw", &kQuantizeWeightsAxis},
    {&Sweep::quantize_grads, &SweepPoint::quantize_grads, "-qg", &kQuantizeGradsAxis},
    {&Sweep::error_feedback, &SweepPoint::error_feedback, "-ef", &kErrorFeedbackAxis}};

// The value the point's overrides give `deck_key` (the last, as with --set), without quotes;
// empty when none does (the deck's, which the sweep does not read).
std::string overridden(const SweepPoint& point, const std::string& deck_key) {
  const std::string prefix = deck_key + "=";
  std::string value;
  for (const std::string& set : point.overrides)
    if (set.compare(0, prefix.size(), prefix) == 0) value = set.substr(prefix.size());
  if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
    value = value.substr(1, value.size() - 2);
  return value;
}

// Why the run would refuse the point's ZeRO++ settings (as src/zero/factory.cpp and
// quantized_gradients.cpp do), or why the point would repeat another one of the sweep: error
// feedback keeps the residuals of quantized gradients, so without them it changes nothing.
std::string quantize_problem(const Sweep& sweep, const SweepPoint& point) {
  const std::string weights = overridden(point, "zero.quantize_weights");
  const std::string grads = overridden(point, "zero.quantize_grads");
  const std::string stage = stage_name(point.stage);
  const std::string all = point.stage == kAllStages ? ", which runs stages 0-3" : "";
  const bool gathers = point.stage != kAllStages && stage_spec(point.stage).gathers_parameters();
  if (!weights.empty() && weights != "none" && !gathers)
    return fmt::format(
        "zero.quantize_weights = \"{}\" needs zero.stage = 3 (this point: stage {}{})", weights,
        stage, all);
  if (!grads.empty() && grads != "none" && (point.stage == 0 || point.stage == kAllStages))
    return fmt::format("zero.quantize_grads = \"{}\" needs zero.stage 1-3 (this point: stage {}{})",
                       grads, stage, all);
  const std::string block = overridden(point, "zero.quantize_block");
  if (grads == "int4" && only(block, "0123456789") && std::stoll(block) % 2 != 0)
    return fmt::format("zero.quantize_grads = \"int4\" needs an even zero.quantize_block ({} here)",
                       block);
  const std::vector<std::string>& feedback = sweep.error_feedback;
  if (point.error_feedback == "true" && grads == "none" &&
      std::count(feedback.begin(), feedback.end(), "false"))
    return "zero.error_feedback = true changes nothing with zero.quantize_grads = \"none\" "
           "(the same run as error_feedback = false)";
  return "";
}

// The point at these coordinates (model, stage, nodes, ranks per node, deck axes and repeat set).
SweepPoint make_point(const Sweep& sweep, SweepPoint point) {
  const SweepModel& model = *point.model;
  point.ranks = point.nodes * point.ranks_per_node;
  std::string axes;
  for (const DeckAxis& axis : kDeckAxes)
    if (!(point.*axis.value).empty()) axes += axis.name_part + point.*axis.value;
  point.name = fmt::format("{}-s{}-n{}x{}-{}{}-r{}", sweep.name, stage_name(point.stage),
                           point.nodes, point.ranks_per_node, model.name, axes, point.repeat);
  point.overrides = model.set;
  point.overrides.insert(point.overrides.end(), sweep.set.begin(), sweep.set.end());
  point.overrides.push_back("zero.stage=" + stage_name(point.stage));
  for (const DeckAxis& axis : kDeckAxes)
    if (!(point.*axis.value).empty())
      point.overrides.push_back(std::string(axis.spec->deck_key) + "=" + point.*axis.value);
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
  if (point.problem.empty()) point.problem = quantize_problem(sweep, point);
  return point;
}

// One setting per combination of the deck axes' values, in kDeckAxes' order (the last axis
// fastest), with only those values set; one empty setting when the sweep has no deck axis.
std::vector<SweepPoint> deck_axis_settings(const Sweep& sweep) {
  std::vector<SweepPoint> settings(1);
  for (const DeckAxis& axis : kDeckAxes) {
    const std::vector<std::string>& values = sweep.*axis.values;
    if (values.empty()) continue;
    std::vector<SweepPoint> combined;
    for (const SweepPoint& setting : settings)
      for (const std::string& value : values) {
        combined.push_back(setting);
        combined.back().*axis.value = value;
      }
    settings = std::move(combined);
  }
  return settings;
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
const SweepAxis kQuantizeWeightsAxis{"quantize_weights",
                                     "zero.quantize_weights",
                                     "a weight quantization (\"none\" or \"int8\")",
                                     -1,
                                     {"none", "int8"}};
const SweepAxis kQuantizeGradsAxis{"quantize_grads",
                                   "zero.quantize_grads",
                                   "a gradient quantization (\"none\", \"int8\" or \"int4\")",
                                   -1,
                                   {"none", "int8", "int4"}};
const SweepAxis kErrorFeedbackAxis{
    "error_feedback", "zero.error_feedback", "true or false", -1, {}, 0, true};

std::vector<SweepPoint> expand_sweep(const Sweep& sweep) {
  std::vector<SweepPoint> points;
  const std::vector<SweepPoint> settings = deck_axis_settings(sweep);
  for (const SweepModel& model : sweep.models)
    for (int64_t nodes : sweep.nodes)
      for (int64_t ranks_per_node : sweep.ranks_per_node)
        for (int stage : sweep.stages)
          for (SweepPoint at : settings)
            for (int64_t repeat = 0; repeat < sweep.repeats; ++repeat) {
              at.model = &model;
              at.stage = stage;
              at.nodes = nodes;
              at.ranks_per_node = ranks_per_node;
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
  double points = static_cast<double>(s.models.size()) * s.nodes.size() * s.ranks_per_node.size() *
                  s.stages.size() * s.repeats;
  for (const DeckAxis& axis : kDeckAxes) points *= std::max<size_t>(1, (s.*axis.values).size());
  if (points > kMaxPoints)
    fail(
        "{}: {:.0f} points (models x nodes x ranks_per_node x stages x shard_sizes x recompute "
        "x tp x quantize_weights x quantize_grads x error_feedback x repeats): at most {:.0f}",
        path, points, kMaxPoints);
}

}  // namespace zm::cli
