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

// A registry's add function and its list, in the order added.
#define ZM_PLAN_REGISTRY(Type, add, list)              \
  void add(Type entry) {                               \
    plan_registry<Type>().push_back(std::move(entry)); \
  }                                                    \
  const std::vector<Type>& list() {                    \
    return plan_registry<Type>();                      \
  }

ZM_PLAN_REGISTRY(PlanPricing, add_plan_pricing, plan_pricings)
ZM_PLAN_REGISTRY(PlanTableColumns, add_plan_table_columns, plan_table_columns)
ZM_PLAN_REGISTRY(PlanColumns, add_plan_columns, plan_columns)
ZM_PLAN_REGISTRY(PlanThroughputNote, add_plan_throughput_note, plan_throughput_notes)
ZM_PLAN_REGISTRY(PlanTableNote, add_plan_table_note, plan_table_notes)
ZM_PLAN_REGISTRY(PlanAxis, add_plan_axis, plan_axes)
ZM_PLAN_REGISTRY(std::unique_ptr<PlanMode>, add_plan_mode, plan_modes)
#undef ZM_PLAN_REGISTRY

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

}  // namespace zm
