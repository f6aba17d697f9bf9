#include "plan/largest.hpp"

#include <iterator>

#include "core/error.hpp"
#include "core/stage_spec.hpp"
#include "model/layout.hpp"
#include "plan/offload_cost.hpp"
#include "plan/plan_extensions.hpp"

namespace zm {

std::vector<LargestOption> largest_options(bool offload_axis) {
  std::vector<LargestOption> options(std::begin(kLargestOptions), std::end(kLargestOptions));
  if (!offload_axis) return options;
  std::vector<LargestOption> crossed;
  for (LargestOffload offload : kOffloadAxis)
    for (LargestOption option : options) {
      option.offload = offload;
      crossed.push_back(option);
    }
  return crossed;
}

Deck with_option(const Deck& deck, const LargestOption& option) {
  Deck d = deck;
  d.zero.shard_size = option.sharding == LargestSharding::Node ? kShardSizeNode : 0;
  d.zero.secondary_shard_size = option.sharding == LargestSharding::Hpz ? kShardSizeNode : 0;
  d.model.recompute = option.recompute ? "blocks" : "none";
  if (option.offload != LargestOffload::AsDeck) {
    d.zero.offload_optimizer = option.offload == LargestOffload::None ? "none" : "host";
    d.zero.offload_params = option.offload == LargestOffload::OptimizerAndParams ? "host" : "none";
  }
  return d;
}

namespace {

LargestModel largest_model(const Deck& deck, const Machine& machine, int64_t devices, int stage,
                           const LargestOption& option) {
  LargestModel cell;
  cell.devices = devices;
  for (const PlanAxis& axis : plan_axes()) cell.axes.push_back(axis.value(deck));
  cell.stage = stage;
  cell.option = option;
  const StageSpec& spec = stage_spec(stage);
  const bool offload_applies =
      option.offload == LargestOffload::Optimizer ? spec.shards_states()
      : option.offload == LargestOffload::OptimizerAndParams
          ? spec.gathers_parameters() && option.sharding != LargestSharding::Hpz
          : true;
  if ((option.sharding == LargestSharding::Hpz && !spec.gathers_parameters()) || !offload_applies) {
    cell.applies = false;
    return cell;
  }
  // Model-parallel groups that cannot tile the devices: no such run.
  if (devices % model_parallel_size(deck) != 0) {
    cell.possible = false;
    return cell;
  }
  Deck d = with_option(deck, option);
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
  require_host_side(d, stage, machine);  // offload needs the machine's host side priced
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
                                              const std::vector<int>& stages, bool offload_axis) {
  const std::vector<LargestOption> options = largest_options(offload_axis);
  std::vector<LargestModel> cells;
  for (int64_t n : devices)
    for (const Deck& d : decks)
      for (int stage : stages)
        for (const LargestOption& option : options)
          cells.push_back(largest_model(d, machine, n, stage, option));
  return cells;
}

std::vector<LargestModel> plan_largest_models(const Deck& deck, const Machine& machine,
                                              const std::vector<int64_t>& devices,
                                              const std::vector<int>& stages, bool offload_axis) {
  return plan_largest_models(std::vector<Deck>{deck}, machine, devices, stages, offload_axis);
}

double max_params_for_model_states(const Deck& deck, int stage, const ZeroMesh& mesh,
                                   double bytes) {
  const double psi = static_cast<double>(ParamLayout(deck.model).real_param_count());
  return bytes * psi / plan_memory(deck, stage, mesh).model_states();
}

}  // namespace zm
