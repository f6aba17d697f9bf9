// Evaluation in a run: the step hook that evaluates on the held-out split every train.eval_every
// steps, after the last step and before a stop, and finds the time to train.target_loss; the
// stage's figures it fills (results.h5, summary.json); what the run's closing table and
// summary.json say of all the stages; and `zeromini inspect`'s lines.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/run_report.hpp"
#include "io/stage_figures.hpp"
#include "modules/evaluation/settings.hpp"
#include "train/training_extensions.hpp"

namespace zm {

// One evaluation on the held-out split, after step `step`.
struct EvalRecord {
  int64_t step = 0;    // the steps trained when it ran (1-based: after step `step`)
  double loss = 0;     // mean over every rank's held-out batches
  double seconds = 0;  // its time on this rank, kept out of the step times
};

// Time to target (train.target_loss): the first evaluation at or below it. The seconds are
// training time, the step times of the stage's steps up to that one summed (evaluations and
// checkpoints excluded; a resumed run counts from its first step).
struct TargetReached {
  double target_loss = 0;  // 0: no target
  bool reached = false;
  int64_t step = 0;    // steps trained (1-based)
  double tokens = 0;   // tokens trained over all ranks
  double seconds = 0;  // training seconds
};

// A stage's evaluations (every stage of a build with the module has them, empty without
// evaluation): in results.h5 the attributes loss_floor and, with a target, target_loss,
// target_reached, steps_to_target, tokens_to_target, seconds_to_target (the rows eval_step,
// eval_loss, eval_seconds are the series kEvaluationSeries); in summary.json the stage's
// `evaluation` and `time_to_target`.
class EvaluationFigures final : public StageFigures {
 public:
  explicit EvaluationFigures(EvaluationSettings settings);

  std::vector<StageAttribute> attributes() const override;
  std::vector<std::string> summary_members(SummaryObject object) const override;

  EvaluationSettings settings;
  std::vector<EvalRecord> evaluations;
  double seconds = 0;                // the evaluations' total on this rank
  double loss_floor = std::nan("");  // the data's, where it is known
  TargetReached target;
};

// results.h5's rows of the evaluations: after step eval_step, eval_loss and the slowest rank's
// eval_seconds.
StageSeries evaluation_series();

// One per run (train/training_extensions.hpp): each stage's figures, and with evaluation its hook.
std::unique_ptr<TrainingExtension> make_evaluation_run();

// What the run says of its stages together: summary.json's `time_to_target`, the closing table's
// evaluations, times to target and second figure of merit.
RunReport evaluation_run_report();

// `zeromini inspect`'s lines of a stage's evaluations and its time to target ("" without).
std::string describe_evaluations(hid_t stage_group);

// How the stages of a run met train.target_loss: how many reached it, and whether every one did,
// at one step (where the stages are exact they must).
struct TargetAgreement {
  int reached = 0;
  bool same_step = false;
};
TargetAgreement target_agreement(const std::vector<StageResult>& results);

}  // namespace zm
