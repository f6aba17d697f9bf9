#include "modules/evaluation/evaluation_run.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include "comm/phase.hpp"
#include "comm/watched_mpi.hpp"
#include "core/log.hpp"
#include "core/text.hpp"
#include "io/h5.hpp"
#include "modules/evaluation/held_out.hpp"

namespace zm {

namespace {

std::string json_number(double value) {
  if (!std::isfinite(value)) return "null";
  return fmt::format("{}", value);
}

// This module's figures among the stage's (StageResult::figures), or nullptr.
const EvaluationFigures* evaluation_of(const StageResult& s) {
  for (const auto& f : s.figures)
    if (const auto* found = dynamic_cast<const EvaluationFigures*>(f.get())) return found;
  return nullptr;
}

// An evaluation on the held-out split every train.eval_every steps, after the last step and
// before a stop; the time to train.target_loss at the first evaluation at or below it.
class Evaluation final : public StepHook {
 public:
  Evaluation(const StageOutputs& o, std::shared_ptr<EvaluationFigures> figures)
      : o_(o), figures_(std::move(figures)), held_out_(held_out_split(o.deck)) {
    const EvaluationSettings& s = figures_->settings;
    figures_->loss_floor = held_out_.loss_floor;
    log_root("[stage {}] evaluation every {} steps: {} held-out micro-batches per rank, {}{}\n",
             o_.stage, s.every, s.batches, held_out_.data->describe(),
             std::isfinite(figures_->loss_floor)
                 ? fmt::format("; the data's loss floor is {:.4f}", figures_->loss_floor)
                 : std::string());
  }
  void on_record(const StepRecord& record) override { trained_seconds_ += record.times.total; }
  void after_step(const StepDone& done) override {
    const int64_t steps_done = done.record.step + 1;
    if (steps_done % figures_->settings.every != 0 && !done.last && !done.stopping) return;
    EvalRecord evaluation;
    evaluation.step = steps_done;
    Communicator& world = o_.trainer.comms().world();
    {
      const std::string name = fmt::format("evaluation after step {}", steps_done);
      PhaseSpec spec("evaluation");
      spec.span(SpanKind::ForwardOnly, -1, name).watched(name).timed(evaluation.seconds);
      // As for the step: collectives completed by the device stream are polled by no wait.
      if (world.completes_on_device_stream())
        spec.deadline("the evaluation's kernels and NCCL collectives on the device");
      Phase phase(o_.context, spec);
      evaluation.loss = o_.trainer.forward_only_loss(*held_out_.data, figures_->settings.batches);
    }
    figures_->evaluations.push_back(evaluation);
    figures_->seconds += evaluation.seconds;
    const double floor = figures_->loss_floor;
    log_root("[stage {}] evaluation after step {:>5}: val loss {:8.4f}{}  {:7.1f} ms\n", o_.stage,
             steps_done, evaluation.loss,
             std::isfinite(floor) ? fmt::format(" (floor {:.4f})", floor) : std::string(),
             evaluation.seconds * 1e3);
    if (o_.results) {
      double slowest = 0;
      watched_reduce(
          world.watchdog(), &evaluation.seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0,
          world.mpi_comm(),
          fmt::format("the results gather of the evaluation after step {}", evaluation.step));
      o_.results->add_series_row(evaluation_series().step, evaluation.step,
                                 {evaluation.loss, slowest});
    }
    reach_target(evaluation);
  }

 private:
  void reach_target(const EvalRecord& evaluation) {
    TargetReached& target = figures_->target;
    if (target.target_loss <= 0 || target.reached || !(evaluation.loss <= target.target_loss))
      return;
    target.reached = true;
    target.step = evaluation.step;
    target.tokens =
        o_.tokens_per_rank_per_step * o_.result.ranks * static_cast<double>(evaluation.step);
    target.seconds = trained_seconds_;
    log_root(
        "[stage {}] target validation loss {} reached after step {}: {} tokens, {:.3f} s of "
        "training (evaluations excluded)\n",
        o_.stage, target.target_loss, target.step, thousands(target.tokens), target.seconds);
  }

  StageOutputs o_;
  std::shared_ptr<EvaluationFigures> figures_;
  HeldOutSplit held_out_;
  double trained_seconds_ = 0;  // this run's step times so far
};

class EvaluationRun final : public TrainingExtension {
 public:
  void add_stage_hooks(const StageOutputs& outputs, StepHooks& hooks) override {
    auto figures = std::make_shared<EvaluationFigures>(evaluation_settings(outputs.deck));
    outputs.result.figures.push_back(figures);
    if (figures->settings.evaluates())
      hooks.add(std::make_unique<Evaluation>(outputs, std::move(figures)));
  }
};

// The closing table's evaluations and times to target, per stage.
std::string evaluation_table(const Deck& deck, const std::vector<StageResult>& results) {
  const EvaluationSettings settings = evaluation_settings(deck);
  const EvaluationFigures* front = evaluation_of(results.front());
  if (!settings.evaluates() || front == nullptr) return "";
  const double floor = front->loss_floor;
  std::string out = fmt::format(
      "\nEvaluation on the held-out split ({} micro-batches per rank; its time is not in the "
      "step times or tokens/s){}:\n",
      settings.batches,
      std::isfinite(floor) ? fmt::format("; the data's loss floor is {:.4f}", floor)
                           : std::string());
  for (const StageResult& s : results) {
    const EvaluationFigures* e = evaluation_of(s);
    if (e == nullptr || e->evaluations.empty()) {
      out += fmt::format("  stage {}: no evaluation ran\n", s.stage);
      continue;
    }
    out += fmt::format("  stage {}: val loss {:.4f} after step {}; {} evaluations, {:.3f} s\n",
                       s.stage, e->evaluations.back().loss, e->evaluations.back().step,
                       e->evaluations.size(), e->seconds);
  }
  if (!settings.targets()) return out;
  out += fmt::format(
      "\nTime to target (validation loss <= {}; training seconds, evaluations excluded):\n",
      settings.target_loss);
  for (const StageResult& s : results) {
    const EvaluationFigures* e = evaluation_of(s);
    if (e != nullptr && e->target.reached)
      out += fmt::format("  stage {}: step {}, {} tokens, {:.3f} s\n", s.stage, e->target.step,
                         thousands(e->target.tokens), e->target.seconds);
    else
      out += fmt::format("  stage {}: not reached in {} steps\n", s.stage, s.steps.size());
  }
  if (results.size() < 2) return out;
  const TargetAgreement agreement = target_agreement(results);
  if (agreement.same_step)
    out += fmt::format("  every stage reached it at step {}\n", front->target.step);
  else
    out += fmt::format("  the stages did not reach it at the same step ({} of {} reached it)\n",
                       agreement.reached, results.size());
  return out;
}

}  // namespace

EvaluationFigures::EvaluationFigures(EvaluationSettings s) : settings(std::move(s)) {
  target.target_loss = settings.target_loss;
}

std::vector<StageAttribute> EvaluationFigures::attributes() const {
  std::vector<StageAttribute> out = {{"loss_floor", loss_floor}};
  if (target.target_loss <= 0) return out;
  const double none = std::nan("");
  out.push_back({"target_loss", target.target_loss});
  out.push_back({"target_reached", static_cast<int64_t>(target.reached)});
  out.push_back({"steps_to_target", target.reached ? target.step : int64_t(-1)});
  out.push_back({"tokens_to_target", target.reached ? target.tokens : none});
  out.push_back({"seconds_to_target", target.reached ? target.seconds : none});
  return out;
}

std::vector<std::string> EvaluationFigures::summary_members(SummaryObject object) const {
  if (object != SummaryObject::Stage) return {};
  std::string list;
  for (size_t i = 0; i < evaluations.size(); ++i)
    list += fmt::format("{}{{\"step\": {}, \"loss\": {}, \"seconds\": {}}}", i ? ", " : "",
                        evaluations[i].step, json_number(evaluations[i].loss),
                        json_number(evaluations[i].seconds));
  const TargetReached& t = target;
  const bool targeted = t.target_loss > 0;
  return {
      fmt::format("      \"evaluation\": {{\"every\": {}, \"batches\": {}, \"loss_floor\": {}, "
                  "\"seconds\": {}, \"last_loss\": {},\n        \"evaluations\": [{}]}}",
                  settings.every, settings.batches, json_number(loss_floor), json_number(seconds),
                  evaluations.empty() ? "null" : json_number(evaluations.back().loss), list),
      fmt::format("      \"time_to_target\": {{\"target_loss\": {}, \"reached\": {}, \"step\": "
                  "{}, \"tokens\": {}, \"seconds\": {}}}",
                  targeted ? json_number(t.target_loss) : "null", t.reached ? "true" : "false",
                  t.reached ? fmt::format("{}", t.step) : "null",
                  t.reached ? json_number(t.tokens) : "null",
                  t.reached ? json_number(t.seconds) : "null")};
}

StageSeries evaluation_series() {
  return {"eval_step", {"eval_loss", "eval_seconds"}, {"", "seconds (the slowest rank)"}};
}

std::unique_ptr<TrainingExtension> make_evaluation_run() {
  return std::make_unique<EvaluationRun>();
}

TargetAgreement target_agreement(const std::vector<StageResult>& results) {
  TargetAgreement agreement;
  auto reached = [](const StageResult& s) {
    const EvaluationFigures* e = evaluation_of(s);
    return e != nullptr && e->target.reached;
  };
  auto step = [](const StageResult& s) {
    const EvaluationFigures* e = evaluation_of(s);
    return e == nullptr ? int64_t(0) : e->target.step;
  };
  for (const StageResult& s : results) agreement.reached += reached(s) ? 1 : 0;
  agreement.same_step = !results.empty() && agreement.reached == static_cast<int>(results.size());
  for (const StageResult& s : results)
    agreement.same_step = agreement.same_step && step(s) == step(results.front());
  return agreement;
}

RunReport evaluation_run_report() {
  RunReport figures;
  // The second figure of merit: seconds to the target, and whether every stage reached it at the
  // same step (they must where the stages are exact).
  figures.summary_members = [](const Deck& deck, const std::vector<StageResult>& results) {
    const EvaluationSettings settings = evaluation_settings(deck);
    if (!settings.targets()) return std::vector<std::string>{};
    const EvaluationFigures* last = results.empty() ? nullptr : evaluation_of(results.back());
    const TargetAgreement agreement = target_agreement(results);
    return std::vector<std::string>{
        fmt::format("\"time_to_target\": {{\"name\": \"training seconds to validation loss {}\", "
                    "\"value\": {}, \"stages_reached\": {}, \"same_step\": {}}}",
                    settings.target_loss,
                    json_number(last && last->target.reached ? last->target.seconds : std::nan("")),
                    agreement.reached, agreement.same_step ? "true" : "false")};
  };
  figures.after_throughput = evaluation_table;
  figures.after_figure_of_merit = [](const Deck& deck, const std::vector<StageResult>& results) {
    const EvaluationSettings settings = evaluation_settings(deck);
    const EvaluationFigures* last = evaluation_of(results.back());
    if (!settings.targets() || last == nullptr || !last->target.reached) return std::string();
    return fmt::format(
        "Second figure of merit: {:.3f} s of training to validation loss {} (stage {})\n",
        last->target.seconds, settings.target_loss, results.back().stage);
  };
  return figures;
}

std::string describe_evaluations(hid_t group) {
  if (!h5::exists(group, "eval_step")) return "";
  std::vector<hsize_t> dims;
  const auto steps = h5::read_doubles(group, "eval_step", dims);
  const auto losses = h5::read_doubles(group, "eval_loss", dims);
  const auto seconds = h5::read_doubles(group, "eval_seconds", dims);
  if (steps.empty()) return "";
  double total = 0;
  for (double s : seconds) total += s;
  std::string out = fmt::format(
      "    evaluation: {} evaluations, val loss {:.4f} (after step {:.0f}) -> {:.4f} (after step "
      "{:.0f}), {:.3f} s",
      steps.size(), losses.front(), steps.front(), losses.back(), steps.back(), total);
  if (h5::has_attr(group, "loss_floor") && std::isfinite(h5::read_attr_double(group, "loss_floor")))
    out += fmt::format(", loss floor {:.4f}", h5::read_attr_double(group, "loss_floor"));
  out += "\n";
  if (!h5::has_attr(group, "target_loss")) return out;
  const double target = h5::read_attr_double(group, "target_loss");
  if (h5::read_attr_int(group, "target_reached") == 0)
    return out + fmt::format("    time to target: validation loss {} not reached\n", target);
  return out + fmt::format(
                   "    time to target: validation loss {} after step {}, {:.0f} tokens, {:.3f} "
                   "s of training\n",
                   target, h5::read_attr_int(group, "steps_to_target"),
                   h5::read_attr_double(group, "tokens_to_target"),
                   h5::read_attr_double(group, "seconds_to_target"));
}

}  // namespace zm
