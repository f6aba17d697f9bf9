// A sweep's points, and the checks of a sweep file that need no TOML.
#include <fmt/format.h>

#include <algorithm>

#include "core/deck.hpp"
#include "core/error.hpp"
#include "core/validate.hpp"
#include "sweep_file.hpp"

namespace zm::cli {

namespace {

constexpr double kMaxPoints = 100000;
const std::string kLower = "abcdefghijklmnopqrstuvwxyz_";
const std::string kWord = kLower + "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

bool only(const std::string& text, const std::string& allowed) {
  return !text.empty() && text.find_first_not_of(allowed) == std::string::npos;
}

// Why the run would refuse the point, in the run's own words, or "": the deck loaded with the
// point's overrides (the checks of single keys and of the model's shape) and validated for the
// point's stages and ranks (core/validate.hpp), as `zeromini run` does.
std::string run_problem(const SweepPoint& point) {
  try {
    const Deck deck = load_deck(point.model->deck, point.overrides, BuildChecks::Skip);
    for (int stage : deck.stages()) validate(deck, {stage, point.ranks, point.ranks_per_node});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
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

// Why the point would repeat another one of the sweep: error feedback keeps the residuals of
// quantized gradients, so without them it changes nothing.
std::string repeat_problem(const Sweep& sweep, const SweepPoint& point) {
  const std::vector<std::string>& feedback = sweep.error_feedback;
  if (point.error_feedback == "true" && overridden(point, "zero.quantize_grads") == "none" &&
      std::count(feedback.begin(), feedback.end(), "false"))
    return "zero.error_feedback = true changes nothing with zero.quantize_grads = \"none\" "
           "(the same run as error_feedback = false)";
  return "";
}

// The point at these coordinates (model, stage, nodes, ranks per node, deck axes and repeat set).
// `first` (the point's repeat 0, whose problems every repeat shares): whether to ask the run's
// checks, which load the deck.
SweepPoint make_point(const Sweep& sweep, SweepPoint point, const SweepPoint* first) {
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
  if (first) {
    point.problem = first->problem;
    return point;
  }
  if (point.problem.empty()) point.problem = run_problem(point);
  if (point.problem.empty()) point.problem = repeat_problem(sweep, point);
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
  // The first round (repeat 0): every point once, its problems checked.
  std::vector<SweepPoint> points;
  const std::vector<SweepPoint> settings = deck_axis_settings(sweep);
  for (const SweepModel& model : sweep.models)
    for (int64_t nodes : sweep.nodes)
      for (int64_t ranks_per_node : sweep.ranks_per_node)
        for (int stage : sweep.stages)
          for (SweepPoint at : settings) {
            at.model = &model;
            at.stage = stage;
            at.nodes = nodes;
            at.ranks_per_node = ranks_per_node;
            points.push_back(make_point(sweep, at, nullptr));
          }
  // The other rounds: the same points in the same order, each with its repeat 0's problems.
  const size_t per_round = points.size();
  points.reserve(per_round * static_cast<size_t>(sweep.repeats));
  for (int64_t repeat = 1; repeat < sweep.repeats; ++repeat)
    for (size_t i = 0; i < per_round; ++i) {
      SweepPoint at = points[i];
      at.repeat = repeat;
      points.push_back(make_point(sweep, at, &points[i]));
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
        "x tp x quantize_weights x quantize_grads x error_feedback x repeat): at most {:.0f}",
        path, points, kMaxPoints);
}

}  // namespace zm::cli
