#include "modules/pipeline_parallel/plan_pipeline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "core/error.hpp"
#include "core/stage_spec.hpp"
#include "model/flops.hpp"
#include "modules/pipeline_parallel/one_f_one_b.hpp"
#include "modules/pipeline_parallel/stage_driver.hpp"
#include "modules/pipeline_parallel/stage_split.hpp"
#include "plan/plan_extensions.hpp"
#include "plan/run_extensions.hpp"
#include "plan/run_options.hpp"
#include "zero/partition.hpp"

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
  if (pp < 1 || (deck.value<std::string>(kLayersKey).empty() && deck.model.layers % pp != 0))
    fail("pipeline degree {}: expected a divisor of model.layers = {}", pp, deck.model.layers);
  Deck d = deck;
  d.set_value(kKey, pp);
  stage_blocks(d, pp);  // against parallel.pp_layers, where the deck gives it
  return d;
}

// Each stage's hardware FLOPs per token: its blocks', and on the last the head's (the whole
// model's count of model/flops.hpp at depths 1 and 2, differenced), split as the run splits them.
std::vector<double> stage_flops(const Deck& deck, int stage, int pp) {
  const AttentionKernels& attention = attention_kernels(run_extensions(deck, stage));
  ModelConfig model = deck.model;
  model.layers = 1;
  const double one = flops_per_token(model, attention).hardware();
  model.layers = 2;
  const double block = flops_per_token(model, attention).hardware() - one;
  std::vector<double> flops;
  const std::vector<int64_t> blocks = stage_blocks(deck, pp);
  for (int s = 0; s < pp; ++s)
    flops.push_back(static_cast<double>(blocks[static_cast<size_t>(s)]) * block +
                    (s + 1 == pp ? one - block : 0.0));
  return flops;
}

// What the priced stage's rank sends per step to its neighbours and in the tied embedding's sum
// (ring bytes), apart from tensor parallelism's collectives at the same level.
double pipeline_bytes(const Deck& deck, int stage, const ZeroMesh& mesh, int part) {
  const ParamLayout layout = run_layout(deck, stage, part);
  const Partition partition(layout, mesh.group_ranks(), mesh.sub_shards());
  double bytes = 0;
  for (const PlannedCollective& c :
       run_extensions(deck, stage)
           .added_traffic(part, partition, zero_options(deck, stage, mesh, part), mesh))
    bytes += ring_bytes(c.op, static_cast<double>(c.count) * c.element_bytes, c.ranks);
  return bytes;
}

// 1F1B's step: m - 1 micro-batches at the pace of the slowest stage, and one through every stage
// (the fill and the drain), (m + P - 1) micro-batch times when the stages are equal. The core
// priced the whole model's compute spread evenly over the stages; the difference is idle time
// that nothing hides. The bubble is the first stage's idle fraction, as the run measures it
// (bubble_figures.hpp): (P - 1) / (m + P - 1) for equal stages.
// At ZeRO stages 2-3 with several micro-batches the two ends sum the tied embedding's gradient
// before each micro-step's reduction (stage_driver.cpp), so the last stage waits after each
// backward until it reaches the first stage: a micro-batch then takes the last stage's forward
// and every stage's backward, after the other stages' forwards of the first (a forward priced at
// a third of a stage's FLOPs, a backward at two thirds). The step is the longer of the two.
void price_bubble(const Deck& deck, int stage, const ZeroMesh& mesh, const Machine* machine, double,
                  PlanPoint& point) {
  const int pp = pp_of(mesh);
  if (pp == 1) return;
  const auto m = static_cast<double>(deck.train.grad_accum);
  const std::vector<double> flops = stage_flops(deck, stage, pp);
  const double sum = std::accumulate(flops.begin(), flops.end(), 0.0);
  double pipeline = (m - 1) * *std::max_element(flops.begin(), flops.end()) + sum;
  if (m > 1 && stage_spec(stage).shards_gradients())
    pipeline = std::max(pipeline, (sum - flops.back()) / 3 + m * (flops.back() + 2 * sum) / 3);
  point.figures["pipeline_bubble"] = 1.0 - m * flops.front() / pipeline;
  point.figures["pipeline_bytes"] = pipeline_bytes(deck, stage, mesh, point.part);
  if (!machine) return;
  const double idle = point.compute_seconds * (pipeline / (m * sum / pp) - 1.0);
  point.figures["pipeline_bubble_seconds"] = idle;
  point.added_serial_seconds += idle;
  point.added_exposed_seconds += idle;
}

// A figure price_bubble sets (0 where it set none: no pipeline).
double figure(const PlanPoint& p, const char* name) {
  const auto it = p.figures.find(name);
  return it == p.figures.end() ? 0.0 : it->second;
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
    return fmt::format(",{},{},{:.0f},{:.4f}", pp_of(p.mesh), p.part, figure(p, "pipeline_bytes"),
                       figure(p, "pipeline_bubble"));
  };
  add_plan_columns(std::move(columns));

  PlanTableColumns table;
  table.shown = any_pipeline;
  table.heading = [](bool) {
    return fmt::format(" | {:>9} {:>5} {:>8} {:>6}", "pp x dp", "stage", "pipe GB", "bubble");
  };
  table.cells = [](const PlanPoint& p, bool) {
    return fmt::format(" | {:>9} {:>5} {:>8} {:>6.3f}",
                       fmt::format("{}x{}", pp_of(p.mesh), p.mesh.data_parallel()), p.part,
                       gb(figure(p, "pipeline_bytes")), figure(p, "pipeline_bubble"));
  };
  add_plan_table_columns(std::move(table));

  add_plan_table_note([](const Deck&, const std::vector<PlanPoint>& points) -> std::string {
    if (!any_pipeline(points)) return "";
    return "Pipeline parallelism (parallel.pp): pp ranks (tp apart with parallel.tp) hold "
           "consecutive blocks, "
           "run by 1F1B over train.grad_accum micro-batches; ZeRO shards over the dp = ranks / "
           "pp ranks of a stage. stage: the stage priced, the one whose rank needs the most "
           "memory (its micro-batches in flight, min(pp - stage, m), each with its activations); "
           "pipe GB: its transfers to its neighbours and the tied embedding's sum per step; "
           "bubble: the first stage's idle fraction, from each stage's FLOPs (its blocks; the "
           "last one's head): 1F1B's step is m - 1 micro-batches at the slowest stage's pace and "
           "one through every stage ((pp - 1) / (m + pp - 1) idle for equal stages), priced into "
           "the step time. "
           "At stages 2-3 each micro-batch's gradients are reduced (and at 3 its parameters "
           "gathered), m times a step, and the last stage waits at each for the first stage's "
           "part of the tied embedding's gradient (priced in the bubble).\n";
  });
}

}  // namespace zm::pipeline
