#include "plan/plan_extensions.hpp"

#include <utility>

namespace zm {

namespace {
template <typename T>
std::vector<T>& plan_registry() {
  static std::vector<T> registered;
  return registered;
}
}  // namespace

void add_plan_pricing(PlanPricing pricing) {
  plan_registry<PlanPricing>().push_back(std::move(pricing));
}
const std::vector<PlanPricing>& plan_pricings() {
  return plan_registry<PlanPricing>();
}
void add_plan_table_columns(PlanTableColumns columns) {
  plan_registry<PlanTableColumns>().push_back(std::move(columns));
}
const std::vector<PlanTableColumns>& plan_table_columns() {
  return plan_registry<PlanTableColumns>();
}
void add_plan_footnote(PlanFootnote footnote, PlanFootnoteAt at) {
  plan_registry<std::pair<PlanFootnoteAt, PlanFootnote>>().emplace_back(at, std::move(footnote));
}
std::vector<PlanFootnote> plan_footnotes(PlanFootnoteAt at) {
  std::vector<PlanFootnote> out;
  for (const auto& note : plan_registry<std::pair<PlanFootnoteAt, PlanFootnote>>())
    if (note.first == at) out.push_back(note.second);
  return out;
}
void add_plan_note(PlanNote note, bool on_mesh) {
  std::vector<PlanNote>& notes = plan_registry<PlanNote>();
  notes.insert(on_mesh ? notes.begin() : notes.end(), std::move(note));
}
const std::vector<PlanNote>& plan_notes() {
  return plan_registry<PlanNote>();
}
void add_plan_columns(PlanColumns group) {
  plan_registry<PlanColumns>().push_back(std::move(group));
}
const std::vector<PlanColumns>& plan_columns() {
  return plan_registry<PlanColumns>();
}
void add_plan_throughput_note(PlanThroughputNote note) {
  plan_registry<PlanThroughputNote>().push_back(std::move(note));
}
const std::vector<PlanThroughputNote>& plan_throughput_notes() {
  return plan_registry<PlanThroughputNote>();
}
void add_plan_table_note(PlanTableNote note) {
  plan_registry<PlanTableNote>().push_back(std::move(note));
}
const std::vector<PlanTableNote>& plan_table_notes() {
  return plan_registry<PlanTableNote>();
}
void add_plan_axis(PlanAxis axis) {
  plan_registry<PlanAxis>().push_back(std::move(axis));
}
const std::vector<PlanAxis>& plan_axes() {
  return plan_registry<PlanAxis>();
}
void add_plan_mode(std::unique_ptr<PlanMode> mode) {
  plan_registry<std::unique_ptr<PlanMode>>().push_back(std::move(mode));
}
const std::vector<std::unique_ptr<PlanMode>>& plan_modes() {
  return plan_registry<std::unique_ptr<PlanMode>>();
}

}  // namespace zm
