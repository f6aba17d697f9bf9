#include <fmt/format.h>

#include "sweep_file.hpp"

namespace zm::cli {

namespace {

SweepPoint make_point(const Sweep& sweep, const SweepModel& model, int stage, int64_t nodes,
                      int64_t ranks_per_node, int64_t repeat) {
  SweepPoint point;
  point.name = fmt::format("{}-s{}-n{}x{}-{}-r{}", sweep.name, stage_name(stage), nodes,
                           ranks_per_node, model.name, repeat);
  point.model = &model;
  point.stage = stage;
  point.nodes = nodes;
  point.ranks_per_node = ranks_per_node;
  point.ranks = nodes * ranks_per_node;
  point.repeat = repeat;
  point.overrides = model.set;
  point.overrides.insert(point.overrides.end(), sweep.set.begin(), sweep.set.end());
  point.overrides.push_back("zero.stage=" + stage_name(stage));
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
  return point;
}

}  // namespace

std::vector<SweepPoint> expand_sweep(const Sweep& sweep) {
  std::vector<SweepPoint> points;
  for (const SweepModel& model : sweep.models)
    for (int64_t nodes : sweep.nodes)
      for (int64_t ranks_per_node : sweep.ranks_per_node)
        for (int stage : sweep.stages)
          for (int64_t repeat = 0; repeat < sweep.repeats; ++repeat)
            points.push_back(make_point(sweep, model, stage, nodes, ranks_per_node, repeat));
  return points;
}

}  // namespace zm::cli
