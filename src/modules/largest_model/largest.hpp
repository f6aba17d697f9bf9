// `zeromini plan --largest`: the largest model of a deck's width that fits one device, for each
// device count x the values of the plan's axes (PlanAxis, plan/plan_extensions.hpp) x stage x
// sharding {all, node, hpZ node} x model.recompute {none, blocks}, and optionally x a module's
// axis (LargestAxis: its variants of the deck, e.g. where the optimizer state lives).
//
// "Largest" is the deepest: the deck's width, heads, vocabulary, sequence length, batch and
// precision are kept, and the layer count grows until the per-device memory of the same buffer
// lists the run allocates (plan_memory) no longer fits the machine's device memory. The step time
// is the planner's prediction at that depth (recomputed forward included). Where the model is cut
// over model dimensions the devices are model-parallel groups times the data-parallel ranks, and
// the parameters are the whole model's.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/deck.hpp"
#include "core/stage_spec.hpp"
#include "core/zero_mesh.hpp"
#include "plan/machine.hpp"
#include "plan/plan_extensions.hpp"
#include "plan/planner.hpp"

namespace zm {

// How a cell shards the model states: over every device (zero.shard_size = 0), within a node
// (zero.shard_size = "node", replicated across nodes), or hpZ (zero.secondary_shard_size =
// "node", stage 3 only: parameters within a node, the optimizer state over every device).
enum class LargestSharding { All, Node, Hpz };

// One option of a cell: a sharding, recomputation or not, and a variant of the axis (-1: none,
// the deck as given).
struct LargestOption {
  LargestSharding sharding = LargestSharding::All;
  bool recompute = false;  // model.recompute = "blocks" (else "none")
  int variant = -1;
};
constexpr LargestOption kLargestOptions[] = {
    {LargestSharding::All, false}, {LargestSharding::All, true},  {LargestSharding::Node, false},
    {LargestSharding::Node, true}, {LargestSharding::Hpz, false}, {LargestSharding::Hpz, true}};

struct LargestModel;

// A module's axis of `plan --largest`, crossed with the core's options: the flag that asks for it,
// its variants of the deck, and what its cells show in the table and the CSV.
struct LargestAxis {
  std::string flag;  // "--name"
  std::string help;
  struct Variant {
    std::string name;                                         // in the CSV
    std::string heading;                                      // of its column in the table
    std::vector<std::pair<std::string, ModuleValue>> values;  // module keys it sets
    // Whether the variant is an option at this stage and sharding (else the cell reads "-").
    std::function<bool(const StageSpec& spec, LargestSharding sharding)> applies;
  };
  std::vector<Variant> variants;
  // Fails where the machine cannot price the axis.
  std::function<void(const Machine& machine)> check;
  // The table: a cell that fits (layers, parameters, the axis's figures, step time; `mark`
  // after), the headings of those figures, the cells' width; lines of the heading, the cells'
  // description, and a note after the table.
  std::function<std::string(const LargestModel& cell, const char* mark)> cell;
  std::string units;
  int width = 0;
  std::function<std::string(const Deck& deck, const Machine& machine)> heading;
  std::string cells_note;
  std::string footnote;
  // The CSV: the columns after the core's (the variant's name first), and a cell's values.
  std::string csv_header;
  std::function<std::string(const LargestModel& cell)> csv_cells;
};
// Registered at start-up (core/modules.hpp).
void add_largest_axis(LargestAxis axis);
// For an axis's cells: a figure a module's pricing put in the plan (PlanPoint::figures; 0 where
// none), and the CSV cells of `c`: its variant's name, then `values` of its plan, or `columns`
// empty cells where no model fits.
double point_figure(const PlanPoint& point, const char* name);
std::string axis_csv_cells(const std::vector<LargestAxis::Variant>& variants, const LargestModel& c,
                           int columns, const std::function<std::string(const PlanPoint&)>& values);
const std::vector<LargestAxis>& largest_axes();
// A line of the heading about the deck's own settings of a module, without an axis ("" none).
using LargestNote = std::function<std::string(const Deck& deck)>;
void add_largest_note(LargestNote note);
const std::vector<LargestNote>& largest_notes();

// What a plan axis (PlanAxis, plan/plan_extensions.hpp) adds to `plan --largest`, where the
// cells take other values than 1: CSV columns (",a,b"), a cell's (`point`: the cell's plan,
// nullptr where none fits or it cannot run), and the sentence the closing note ends with.
struct LargestAxisColumns {
  std::string option;  // the plan axis's ("--name")
  std::string header;
  std::function<std::string(int64_t value, const PlanPoint* point)> cells;
  std::string note;
};
void add_largest_axis_columns(LargestAxisColumns columns);
// A plan axis's (none where it added none).
const LargestAxisColumns& largest_axis_columns(const PlanAxis& axis);

// The options of a cell: kLargestOptions, or with an axis each of them at every variant (the
// axis outermost).
std::vector<LargestOption> largest_options(const LargestAxis* axis);

struct LargestModel {
  int64_t devices = 1;
  std::vector<int64_t> axes;  // the deck's value of each plan axis (plan_axes())
  int stage = 0;
  LargestOption option;
  // False for hpZ below stage 3, and for an axis's variant that is no option at the stage and
  // sharding; nothing below is meaningful then.
  bool applies = true;
  // False when the shard groups cannot tile the devices (a node's ranks do not divide them) or
  // the model-parallel groups cannot; nothing below is meaningful then.
  bool possible = true;
  ZeroMesh mesh;
  int64_t layers = 0;  // the deepest that fits; 0: not even one block fits
  PlanPoint point;     // the plan at that depth (parameters, memory, traffic, time); layers > 0
};

// The deck with an option applied: its zero.shard_size, zero.secondary_shard_size,
// model.recompute and the keys of its axis's variant.
Deck with_option(const Deck& deck, const LargestOption& option, const LargestAxis* axis);

// Every devices x deck x stage x option, in that order (options as largest_options(axis) lists
// them): `decks` are the deck at each point of the plan's axes.
std::vector<LargestModel> plan_largest_models(const std::vector<Deck>& decks,
                                              const Machine& machine,
                                              const std::vector<int64_t>& devices,
                                              const std::vector<int>& stages,
                                              const LargestAxis* axis = nullptr);
// The same for the deck alone.
std::vector<LargestModel> plan_largest_models(const Deck& deck, const Machine& machine,
                                              const std::vector<int64_t>& devices,
                                              const std::vector<int>& stages,
                                              const LargestAxis* axis = nullptr);

// The ZeRO paper's "maximum theoretical model size" (Table 2): the parameters Psi of the whole
// model whose model states alone (parameters, gradients, optimizer state; no activations or
// buffers) take `bytes` per rank at `stage` on `mesh`, at the deck's proportions:
// bytes x Psi / (model-state bytes per rank). Continuous in Psi, unlike the layer count.
double max_params_for_model_states(const Deck& deck, int stage, const ZeroMesh& mesh, double bytes);

}  // namespace zm
