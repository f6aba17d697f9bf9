#include "plan/plan_extensions.hpp"

#include <utility>

#include "core/registry.hpp"

namespace zm {

ZM_REGISTRY(PlanPricing, add_plan_pricing, plan_pricings)
ZM_REGISTRY(PlanTableColumns, add_plan_table_columns, plan_table_columns)
ZM_REGISTRY(PlanColumns, add_plan_columns, plan_columns)
ZM_REGISTRY(PlanThroughputNote, add_plan_throughput_note, plan_throughput_notes)
ZM_REGISTRY(PlanTableNote, add_plan_table_note, plan_table_notes)
ZM_REGISTRY(PlanAxis, add_plan_axis, plan_axes)
ZM_REGISTRY(std::unique_ptr<PlanMode>, add_plan_mode, plan_modes)

void add_plan_footnote(PlanFootnote footnote, PlanFootnoteAt at) {
  registry<std::pair<PlanFootnoteAt, PlanFootnote>>().emplace_back(at, std::move(footnote));
}
std::vector<PlanFootnote> plan_footnotes(PlanFootnoteAt at) {
  std::vector<PlanFootnote> out;
  for (const auto& note : registry<std::pair<PlanFootnoteAt, PlanFootnote>>())
    if (note.first == at) out.push_back(note.second);
  return out;
}
void add_plan_note(PlanNote note, bool on_mesh) {
  std::vector<PlanNote>& notes = registry<PlanNote>();
  notes.insert(on_mesh ? notes.begin() : notes.end(), std::move(note));
}
const std::vector<PlanNote>& plan_notes() {
  return registry<PlanNote>();
}

}  // namespace zm
