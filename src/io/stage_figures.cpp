#include "io/stage_figures.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/registry.hpp"

namespace zm {

namespace {

std::vector<std::string>& columns() {
  static std::vector<std::string> all = {"forward", "backward", "comm_wait", "optimizer", "total"};
  return all;
}

}  // namespace

void add_step_time_columns(const std::vector<std::string>& added) {
  for (const std::string& column : added) {
    ZM_ASSERT(std::find(columns().begin(), columns().end(), column) == columns().end(),
              "step_times column {} added twice", column);
    columns().push_back(column);
  }
}

const std::vector<std::string>& step_time_columns() {
  return columns();
}

ZM_REGISTRY(StageDescription, add_stage_description, stage_descriptions)

void add_stage_series(StageSeries added) {
  ZM_ASSERT(added.units.size() == added.values.size(), "series {}: {} units for {} values",
            added.step, added.units.size(), added.values.size());
  for (const StageSeries& s : registry<StageSeries>())
    ZM_ASSERT(s.step != added.step, "the series {} added twice", added.step);
  registry<StageSeries>().push_back(std::move(added));
}

const std::vector<StageSeries>& stage_series() {
  return registry<StageSeries>();
}

}  // namespace zm
