// What a module adds to the planner and to `zeromini plan`, registered at start-up: axes of the
// points priced, its pricing of a point, lines of the header and before the table, CSV columns at
// fixed places (so that scripts keep reading columns by name and by position), table columns,
// notes after the table, and modes of `plan` that print something else than the table.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/deck.hpp"
#include "plan/machine.hpp"
#include "plan/planner.hpp"

namespace zm {

// A module's pricing of a point, after the core's (plan_point): PlanPoint::figures and what it adds
// to the step, serial and not hidden behind backward (added_serial_seconds,
// added_exposed_seconds). `machine` may be null; `backward_seconds`: backward's share of compute.
using PlanPricing =
    std::function<void(const Deck& deck, int stage, const ZeroMesh& mesh, const Machine* machine,
                       double backward_seconds, PlanPoint& point)>;
void add_plan_pricing(PlanPricing pricing);
const std::vector<PlanPricing>& plan_pricings();

// The header's lines for the deck ("" for none; each line ends with "\n"). `on_mesh`: what a
// module says of the mesh, first, right after the core's line on hybrid sharding.
using PlanNote = std::function<std::string(const Deck& deck)>;
void add_plan_note(PlanNote note, bool on_mesh = false);
const std::vector<PlanNote>& plan_notes();

// Where a group of CSV columns goes: after intra_group_bytes,inter_group_bytes, after
// tflops_per_device (with a machine only), after the all-to-all bytes, or at the end.
enum class PlanColumnsAt { AfterLevels, AfterThroughput, AfterAllToAll, AtEnd };
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

// Columns of the table's rows where shown for these points: after the core's traffic by level,
// after the predicted TFLOP/s (with a machine only), or at the end.
enum class PlanTableColumnsAt { AfterLevels, AfterThroughput, AtEnd };
struct PlanTableColumns {
  std::function<bool(const std::vector<PlanPoint>& points)> shown;
  std::function<std::string(bool have_machine)> heading;  // " | name name"
  std::function<std::string(const PlanPoint& point, bool have_machine)> cells;
  PlanTableColumnsAt at = PlanTableColumnsAt::AtEnd;
};
void add_plan_table_columns(PlanTableColumns columns);
const std::vector<PlanTableColumns>& plan_table_columns();

// A note after the table ("" for none): right after it, or after the core's note on the machine.
using PlanFootnote =
    std::function<std::string(const std::vector<PlanPoint>& points, const Machine* machine)>;
enum class PlanFootnoteAt { AfterTable, AtEnd };
void add_plan_footnote(PlanFootnote footnote, PlanFootnoteAt at = PlanFootnoteAt::AtEnd);
std::vector<PlanFootnote> plan_footnotes(PlanFootnoteAt at);

// What follows "Predicted throughput: TFLOP/s = model FLOPs per device / overlapped step time" in
// the note on the machine ("; ...", or "" for nothing), in the order added.
using PlanThroughputNote = std::function<std::string(const Deck& deck, const Machine& machine)>;
void add_plan_throughput_note(PlanThroughputNote note);
const std::vector<PlanThroughputNote>& plan_throughput_notes();

// Lines printed after the header, before the table, for these points ("" for none).
using PlanTableNote =
    std::function<std::string(const Deck& deck, const std::vector<PlanPoint>& points)>;
void add_plan_table_note(PlanTableNote note);
const std::vector<PlanTableNote>& plan_table_notes();

// An axis of the points `zeromini plan` prices: an option taking a list of integers ("1,2,4"),
// each setting a deck key. `plan` prices every rank count x value (x later axes' values) x stage,
// leaving out rank counts the model-parallel size does not divide; without the option, the
// deck's value. A PlanMode gets the deck at every point of the axes.
struct PlanAxis {
  std::string option;  // "--name"
  std::string help;    // the option's help
  std::string name;    // its short name: a column's heading, "8 ranks at NAME 3"
  std::string what;    // what one value is, in messages ("... degree")
  // The deck's value, and the deck at `value` (fails naming what does not fit the deck).
  std::function<int64_t(const Deck& deck)> value;
  std::function<Deck(const Deck& deck, int64_t value)> at;
};
void add_plan_axis(PlanAxis axis);
const std::vector<PlanAxis>& plan_axes();

// A flag of `zeromini plan` (no value): *value is set where it is given (once), or *count counts
// how often it was.
struct PlanFlag {
  std::string flag;  // "--name"
  std::string help;
  bool* value = nullptr;
  int* count = nullptr;
};

// What `zeromini plan` was asked for, as a mode gets it.
struct PlanRequest {
  std::vector<Deck> decks;  // the deck (its precision resolved) at every point of the plan's axes
  const Machine* machine;   // --machine's, or nullptr
  // --ranks's counts (fails on a bad one), empty where it was not given.
  std::function<std::vector<int64_t>()> ranks;
  std::vector<int> stages;
  std::string format;  // "table" or "csv"
};

// A mode of `zeromini plan`, asked for by a flag of its own: it prints instead of the plan's table
// or CSV. miniapp/ adds its flags (after --format) and calls it.
class PlanMode {
 public:
  virtual ~PlanMode() = default;
  virtual PlanFlag flag() = 0;                              // the flag that asks for the mode
  virtual std::vector<PlanFlag> flags() { return {}; }      // the flags that go with it
  virtual std::string default_ranks() const { return ""; }  // --ranks's default for it, "" none
  // Where the plan runs without the mode: refuses its flags (zm::Error).
  virtual void check_unused() {}
  virtual int run(const PlanRequest& request) = 0;  // the exit status
};
void add_plan_mode(std::unique_ptr<PlanMode> mode);
const std::vector<std::unique_ptr<PlanMode>>& plan_modes();

}  // namespace zm
