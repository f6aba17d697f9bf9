// What a module adds to the planner and to `zeromini plan`'s output: its pricing of a point (the
// figures and seconds of what it adds to a step), lines of the header (after the core's), groups
// of CSV columns at fixed places of the row (so that scripts keep reading columns by name and by
// position), columns at the end of the table's rows, and notes after the table. Registered at
// start-up (core/modules.hpp).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/deck.hpp"
#include "plan/machine.hpp"
#include "plan/planner.hpp"

namespace zm {

// A module's pricing of a point, after the core's (plan_point): figures for its columns
// (PlanPoint::figures) and what it adds to the step, serial and what the overlapped step does not
// hide behind backward (PlanPoint::added_serial_seconds, added_exposed_seconds). `machine` is null
// without one (then only figures that need none), `backward_seconds` backward's share of the
// compute.
using PlanPricing = std::function<void(const Deck& deck, int stage, const ZeroMesh& mesh,
                                       const Machine* machine, double backward_seconds,
                                       PlanPoint& point)>;
void add_plan_pricing(PlanPricing pricing);
const std::vector<PlanPricing>& plan_pricings();

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

// Columns at the end of the table's rows (after the core's), where shown for these points.
struct PlanTableColumns {
  std::function<bool(const std::vector<PlanPoint>& points)> shown;
  std::function<std::string(bool have_machine)> heading;  // " | name name"
  std::function<std::string(const PlanPoint& point, bool have_machine)> cells;
};
void add_plan_table_columns(PlanTableColumns columns);
const std::vector<PlanTableColumns>& plan_table_columns();

// A note printed after the table ("" for none), with the machine where there is one.
using PlanFootnote =
    std::function<std::string(const std::vector<PlanPoint>& points, const Machine* machine)>;
void add_plan_footnote(PlanFootnote footnote);
const std::vector<PlanFootnote>& plan_footnotes();

}  // namespace zm
