// What a module adds to `zeromini plan`'s output about its own settings: lines of the header (after
// the core's), and groups of CSV columns at fixed places of the row, so that scripts keep reading
// columns by name and by position. Registered at start-up (core/modules.hpp).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/deck.hpp"
#include "plan/planner.hpp"

namespace zm {

// The header's lines for the deck ("" for none; each line ends with "\n").
using PlanNote = std::function<std::string(const Deck& deck)>;
void add_plan_note(PlanNote note);
const std::vector<PlanNote>& plan_notes();

// Where a group of CSV columns goes: after the traffic by level (intra_group_bytes,
// inter_group_bytes), after the all-to-all bytes, or at the end of the row.
enum class PlanColumnsAt { AfterLevels, AfterAllToAll, AtEnd };
struct PlanColumns {
  PlanColumnsAt at;
  // Whether the columns are printed for this deck and these points.
  std::function<bool(const Deck& deck, const std::vector<PlanPoint>& points)> shown;
  std::string header;  // ",name,name"
  // The row's cells (",value,value"); with a machine, the cells that need one.
  std::function<std::string(const Deck& deck, const PlanPoint& point, bool have_machine)> row;
};
void add_plan_columns(PlanColumns columns);
const std::vector<PlanColumns>& plan_columns();

}  // namespace zm
