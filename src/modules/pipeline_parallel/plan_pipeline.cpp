#include "modules/pipeline_parallel/plan_pipeline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "modules/pipeline_parallel/one_f_one_b.hpp"
#include "modules/pipeline_parallel/stage_driver.hpp"
#include "plan/plan_extensions.hpp"

namespace zm::pipeline {

namespace {

const char* const kKey = "parallel.pp";

int pp_of(const ZeroMesh& mesh) {
  return mesh.mesh.has(kPipeDim) ? mesh.mesh.size(kPipeDim) : 1;
}

bool any_pipeline(const std::vector<PlanPoint>& points) {
  return std::any_of(points.begin(), points.end(),
                     [](const PlanPoint& p) { return pp_of(p.mesh) > 1; });
}

// The deck at pipeline degree `pp` (`zeromini plan --pp`).
Deck with_pipeline(const Deck& deck, int64_t pp) {
  if (pp < 1 || deck.model.layers % pp != 0)
    fail("pipeline degree {}: expected a divisor of model.layers = {}", pp, deck.model.layers);
  Deck d = deck;
  d.set_value(kKey, pp);
  return d;
}

// 1F1B runs m + P - 1 slots of one micro-batch's forward and backward on every stage, m of them
// busy: the step's compute grows by (P - 1) / m, idle time that nothing hides. A stage's compute
// is priced as the whole model's over the ranks (the stages equal; the last one's head is spread).
void price_bubble(const Deck& deck, int, const ZeroMesh& mesh, const Machine* machine, double,
                  PlanPoint& point) {
  const int pp = pp_of(mesh);
  if (pp == 1) return;
  const auto m = static_cast<int>(deck.train.grad_accum);
  point.figures["pipeline_bubble"] = bubble_fraction(pp, m);
  if (!machine) return;
  const double idle = point.compute_seconds * (pp - 1) / m;
  point.figures["pipeline_bubble_seconds"] = idle;
  point.added_serial_seconds += idle;
  point.added_exposed_seconds += idle;
}

std::string gb(double bytes) {
  return fmt::format("{:.3f}", bytes / 1e9);
}

}  // namespace

void add_pipeline_plan() {
  PlanAxis axis;
  axis.option = "--pp";
  axis.help =
      "Pipeline degrees, comma separated (e.g. 1,2,4); default: the deck's parallel.pp. Rank "
      "counts that a degree does not divide are left out";
  axis.name = "pp";
  axis.what = "pipeline degree";
  axis.value = [](const Deck& deck) { return deck.value<int64_t>(kKey); };
  axis.at = with_pipeline;
  add_plan_axis(std::move(axis));
  add_plan_pricing(price_bubble);

  PlanColumns columns;
  columns.at = PlanColumnsAt::AtEnd;
  columns.shown = [](const Deck&, const std::vector<PlanPoint>& points) {
    return any_pipeline(points);
  };
  columns.header = ",pp,pipeline_stage,pipeline_bytes,pipeline_bubble";
  columns.row = [](const Deck&, const PlanPoint& p, bool) {
    const auto bubble = p.figures.find("pipeline_bubble");
    return fmt::format(",{},{},{:.0f},{:.4f}", pp_of(p.mesh), p.part,
                       p.bytes_at_level(CommLevel::ModelParallel),
                       bubble == p.figures.end() ? 0.0 : bubble->second);
  };
  add_plan_columns(std::move(columns));

  PlanTableColumns table;
  table.shown = any_pipeline;
  table.heading = [](bool) {
    return fmt::format(" | {:>9} {:>5} {:>8} {:>6}", "pp x dp", "stage", "pipe GB", "bubble");
  };
  table.cells = [](const PlanPoint& p, bool) {
    const auto bubble = p.figures.find("pipeline_bubble");
    return fmt::format(" | {:>9} {:>5} {:>8} {:>6.3f}",
                       fmt::format("{}x{}", pp_of(p.mesh), p.mesh.data_parallel()), p.part,
                       gb(p.bytes_at_level(CommLevel::ModelParallel)),
                       bubble == p.figures.end() ? 0.0 : bubble->second);
  };
  add_plan_table_columns(std::move(table));

  add_plan_table_note([](const Deck&, const std::vector<PlanPoint>& points) -> std::string {
    if (!any_pipeline(points)) return "";
    return "Pipeline parallelism (parallel.pp): pp consecutive ranks hold consecutive blocks, "
           "run by 1F1B over train.grad_accum micro-batches; ZeRO shards over the dp = ranks / "
           "pp ranks of a stage. stage: the stage priced, the one whose rank needs the most "
           "memory (its micro-batches in flight, min(pp - stage, m), each with its activations); "
           "pipe GB: its transfers to its neighbours and the tied embedding's sum per step; "
           "bubble: (pp - 1) / (m + pp - 1) of the step idle, priced into the step time. "
           "Stages 2-3 are priced as their schedule runs them (each micro-batch's gradients "
           "reduced, its parameters gathered); a run refuses them under a pipeline so far.\n";
  });
}

}  // namespace zm::pipeline
