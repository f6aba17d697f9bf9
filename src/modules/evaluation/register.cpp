// The module's registration (core/modules.hpp): its deck keys and their checks, the tail of the
// training shard it holds out, the held-out split's check before a run, its part of every run
// (evaluation_run.hpp: the step hook, the stage's figures and series in results.h5, summary.json,
// the closing table, inspect), and its figures in `zeromini plan` (evaluation_cost.hpp).
#include <fmt/format.h>

#include <algorithm>

#include "core/deck_keys.hpp"
#include "core/validate.hpp"
#include "core/zero_mesh.hpp"
#include "io/run_report.hpp"
#include "io/stage_figures.hpp"
#include "modules/evaluation/evaluation_cost.hpp"
#include "modules/evaluation/evaluation_run.hpp"
#include "modules/evaluation/held_out.hpp"
#include "modules/evaluation/settings.hpp"
#include "plan/plan_extensions.hpp"
#include "plan/run_extensions.hpp"
#include "train/command_extensions.hpp"

namespace zm {

namespace {

// Before training: the held-out split holds what one evaluation reads (bad input otherwise).
class HeldOutCheck final : public RunCommandExtension {
 public:
  std::vector<CommandOption> options() override { return {}; }
  void before_training(const Deck& deck, const RunInvocation& run) override {
    check_held_out(deck, run.ranks / std::max<int64_t>(1, model_parallel_size(deck)));
  }
};

double figure(const PlanPoint& p, const char* name) {
  const auto found = p.figures.find(name);
  return found == p.figures.end() ? 0.0 : found->second;
}

// The planner's figures of one evaluation at the point (evaluation_cost.hpp).
void price(const Deck& deck, int stage, const ZeroMesh& mesh, const Machine* machine, double,
           PlanPoint& p) {
  const EvaluationSettings settings = evaluation_settings(deck);
  p.figures["evaluates"] = settings.evaluates() ? 1 : 0;
  if (!settings.evaluates()) return;
  const EvaluationCost cost = evaluation_cost(deck, stage, mesh, machine, settings.batches);
  p.figures["eval_bytes"] = cost.total_bytes();
  p.figures["eval_copy_bytes"] = cost.copies.bytes;
  if (!machine) return;
  p.figures["eval_s"] = cost.seconds();
  // Every train.eval_every steps and after the last step: ceil(steps / every) in a run.
  const int64_t evaluations = (deck.train.steps + settings.every - 1) / settings.every;
  p.added_run_seconds += static_cast<double>(evaluations) * cost.seconds();
}

bool any_evaluation(const std::vector<PlanPoint>& points) {
  return std::any_of(points.begin(), points.end(),
                     [](const PlanPoint& p) { return figure(p, "evaluates") > 0; });
}

std::string plan_note(const Deck& deck) {
  const EvaluationSettings s = evaluation_settings(deck);
  if (!s.evaluates()) return "";
  return fmt::format(
      "  evaluation: train.eval_every = {}: {} held-out micro-batches per data-parallel rank, "
      "forward only (stage 3 gathers each unit as a training forward does); eval GB: what each "
      "rank sends in one evaluation, eval s: its time (the forward and its gathers overlapped), "
      "neither in the step's figures\n",
      s.every, s.batches);
}

PlanTableColumns table_columns() {
  PlanTableColumns columns;
  columns.shown = any_evaluation;
  columns.heading = [](bool have_machine) {
    std::string text = fmt::format(" | {:>9}", "eval GB");
    if (have_machine) text += fmt::format(" {:>9}", "eval s");
    return text;
  };
  columns.cells = [](const PlanPoint& p, bool have_machine) {
    std::string text = fmt::format(" | {:>9.3f}", figure(p, "eval_bytes") / 1e9);
    if (have_machine) text += fmt::format(" {:>9.4g}", figure(p, "eval_s"));
    return text;
  };
  return columns;
}

}  // namespace

void register_module_evaluation() {
  add_deck_keys(evaluation_keys());
  add_validation([](const Deck& deck, const RunShape&, Validation) { check_evaluation(deck); });
  add_run_configurer([](const Deck& deck, int, RunExtensions& extensions) {
    if (holds_out_tail(deck))
      extensions.reserved_data_tail = evaluation_settings(deck).val_fraction;
  });
  add_run_command_extension(std::make_unique<HeldOutCheck>());
  add_training_extension(make_evaluation_run);
  add_stage_series(evaluation_series());
  add_stage_description(describe_evaluations);
  add_run_report(evaluation_run_report());
  add_plan_pricing(price);
  add_plan_note(plan_note);
  add_plan_table_columns(table_columns());
}

}  // namespace zm
