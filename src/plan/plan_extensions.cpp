#include "plan/plan_extensions.hpp"

namespace zm {

namespace {
std::vector<PlanNote>& notes() {
  static std::vector<PlanNote> registered;
  return registered;
}
std::vector<PlanColumns>& columns() {
  static std::vector<PlanColumns> registered;
  return registered;
}
}  // namespace

void add_plan_note(PlanNote note) {
  notes().push_back(std::move(note));
}
const std::vector<PlanNote>& plan_notes() {
  return notes();
}
void add_plan_columns(PlanColumns group) {
  columns().push_back(std::move(group));
}
const std::vector<PlanColumns>& plan_columns() {
  return columns();
}

}  // namespace zm
