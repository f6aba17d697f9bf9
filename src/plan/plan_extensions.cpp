#include "plan/plan_extensions.hpp"

namespace zm {

namespace {
template <typename T>
std::vector<T>& registered() {
  static std::vector<T> all;
  return all;
}
}  // namespace

void add_plan_note(PlanNote note) {
  registered<PlanNote>().push_back(std::move(note));
}
const std::vector<PlanNote>& plan_notes() {
  return registered<PlanNote>();
}
void add_plan_columns(PlanColumns group) {
  registered<PlanColumns>().push_back(std::move(group));
}
const std::vector<PlanColumns>& plan_columns() {
  return registered<PlanColumns>();
}
void add_plan_table_columns(PlanTableColumns group) {
  registered<PlanTableColumns>().push_back(std::move(group));
}
const std::vector<PlanTableColumns>& plan_table_columns() {
  return registered<PlanTableColumns>();
}
void add_plan_table_note(PlanTableNote note) {
  registered<PlanTableNote>().push_back(std::move(note));
}
const std::vector<PlanTableNote>& plan_table_notes() {
  return registered<PlanTableNote>();
}
void add_plan_axis(PlanAxis axis) {
  registered<PlanAxis>().push_back(std::move(axis));
}
const std::vector<PlanAxis>& plan_axes() {
  return registered<PlanAxis>();
}

}  // namespace zm
