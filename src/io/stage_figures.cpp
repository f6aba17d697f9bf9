#include "io/stage_figures.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace zm {

namespace {

std::vector<std::string>& columns() {
  static std::vector<std::string> all = {"forward", "backward", "comm_wait", "optimizer", "total"};
  return all;
}

std::vector<StageDescription>& descriptions() {
  static std::vector<StageDescription> all;
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

void add_stage_description(StageDescription describe) {
  descriptions().push_back(std::move(describe));
}

const std::vector<StageDescription>& stage_descriptions() {
  return descriptions();
}

}  // namespace zm
