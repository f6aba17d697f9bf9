#include "modules/largest_model/largest.hpp"

#include <iterator>

#include "core/deck_keys.hpp"
#include "core/error.hpp"
#include "core/stage_spec.hpp"
#include "model/layout.hpp"

namespace zm {

namespace {
template <typename T>
std::vector<T>& largest_registry() {
  static std::vector<T> registered;
  return registered;
}

// Whether this build has hpZ (the zeropp module's zero.secondary_shard_size); without it the
// hpZ options are no run.
bool hpz_built(const Deck& deck) {
  return !module_setting(deck, "zero.secondary_shard_size", "").empty();
}
}  // namespace

void add_largest_axis(LargestAxis axis) {
  largest_registry<LargestAxis>().push_back(std::move(axis));
}
const std::vector<LargestAxis>& largest_axes() {
  return largest_registry<LargestAxis>();
}
void add_largest_note(LargestNote note) {
  largest_registry<LargestNote>().push_back(std::move(note));
}
const std::vector<LargestNote>& largest_notes() {
  return largest_registry<LargestNote>();
}

double point_figure(const PlanPoint& point, const char* name) {
  const auto found = point.figures.find(name);
  return found == point.figures.end() ? 0.0 : found->second;
}

std::string axis_csv_cells(const std::vector<LargestAxis::Variant>& variants, const LargestModel& c,
                           int columns,
                           const std::function<std::string(const PlanPoint&)>& values) {
  const std::string name = "," + variants[static_cast<size_t>(c.option.variant)].name;
  if (!c.possible || c.layers == 0) return name + std::string(static_cast<size_t>(columns), ',');
  return name + values(c.point);
}
void add_largest_axis_columns(LargestAxisColumns columns) {
  largest_registry<LargestAxisColumns>().push_back(std::move(columns));
}
const LargestAxisColumns& largest_axis_columns(const PlanAxis& axis) {
  static const LargestAxisColumns none{"", "", [](int64_t, const PlanPoint*) { return ""; }, ""};
  for (const LargestAxisColumns& c : largest_registry<LargestAxisColumns>())
    if (c.option == axis.option) return c;
  return none;
}

std::vector<LargestOption> largest_options(const LargestAxis* axis) {
  std::vector<LargestOption> options(std::begin(kLargestOptions), std::end(kLargestOptions));
  if (!axis) return options;
  std::vector<LargestOption> crossed;
  for (size_t v = 0; v < axis->variants.size(); ++v)
    for (LargestOption option : options) {
      option.variant = static_cast<int>(v);
      crossed.push_back(option);
    }
  return crossed;
}

Deck with_option(const Deck& deck, const LargestOption& option, const LargestAxis* axis) {
  Deck d = deck;
  d.zero.shard_size = option.sharding == LargestSharding::Node ? kShardSizeNode : 0;
  if (option.sharding == LargestSharding::Hpz)
    d.set_value("zero.secondary_shard_size", kShardSizeNode);
  else if (hpz_built(deck))
    d.set_value("zero.secondary_shard_size", int64_t{0});
  d.model.recompute = option.recompute ? "blocks" : "none";
  if (axis && option.variant >= 0)
    for (const auto& [key, value] : axis->variants[static_cast<size_t>(option.variant)].values)
      d.set_value(key, value);
  return d;
}

namespace {

LargestModel largest_model(const Deck& deck, const Machine& machine, int64_t devices, int stage,
                           const LargestOption& option, const LargestAxis* axis) {
  LargestModel cell;
  cell.devices = devices;
  for (const PlanAxis& plan_axis : plan_axes()) cell.axes.push_back(plan_axis.value(deck));
  cell.stage = stage;
  cell.option = option;
  const StageSpec& spec = stage_spec(stage);
  const bool variant_applies =
      !axis || option.variant < 0 ||
      axis->variants[static_cast<size_t>(option.variant)].applies(spec, option.sharding);
  if ((option.sharding == LargestSharding::Hpz &&
       (!spec.gathers_parameters() || !hpz_built(deck))) ||
      !variant_applies) {
    cell.applies = false;
    return cell;
  }
  // Model-parallel groups that cannot tile the devices: no such run.
  if (devices % model_parallel_size(deck) != 0) {
    cell.possible = false;
    return cell;
  }
  Deck d = with_option(deck, option, axis);
  try {
    cell.mesh = plan_zero_mesh(d, stage, devices, &machine);
  } catch (const Error&) {
    // A node's ranks that do not divide the devices: that run cannot be launched, so the cell
    // is left out rather than ending the whole table. Any other refusal (a rank count out of
    // range) is the user's to see.
    if (option.sharding == LargestSharding::All) throw;
    cell.possible = false;
    return cell;
  }
  cell.layers = largest_fitting_layers(d, stage, cell.mesh, memory_limits(machine, cell.mesh));
  if (cell.layers > 0) {
    d.model.layers = cell.layers;
    cell.point = plan_point(d, stage, devices, &machine);
  }
  return cell;
}

}  // namespace

std::vector<LargestModel> plan_largest_models(const std::vector<Deck>& decks,
                                              const Machine& machine,
                                              const std::vector<int64_t>& devices,
                                              const std::vector<int>& stages,
                                              const LargestAxis* axis) {
  if (axis) axis->check(machine);
  const std::vector<LargestOption> options = largest_options(axis);
  std::vector<LargestModel> cells;
  for (int64_t n : devices)
    for (const Deck& d : decks)
      for (int stage : stages)
        for (const LargestOption& option : options)
          cells.push_back(largest_model(d, machine, n, stage, option, axis));
  return cells;
}

std::vector<LargestModel> plan_largest_models(const Deck& deck, const Machine& machine,
                                              const std::vector<int64_t>& devices,
                                              const std::vector<int>& stages,
                                              const LargestAxis* axis) {
  return plan_largest_models(std::vector<Deck>{deck}, machine, devices, stages, axis);
}

double max_params_for_model_states(const Deck& deck, int stage, const ZeroMesh& mesh,
                                   double bytes) {
  const double psi = static_cast<double>(ParamLayout(deck.model).real_param_count());
  return bytes * psi / plan_memory(deck, stage, mesh).model_states();
}

}  // namespace zm
