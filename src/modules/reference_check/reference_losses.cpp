#include "modules/reference_check/reference_losses.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/deck_keys.hpp"
#include "core/error.hpp"
#include "modules/reference_check/reference_settings.hpp"

namespace zm {

namespace {

// The relative tolerance of an fp32 reference. A correct build differs from the one that made a
// reference only in the order of its floating-point sums: the rank count at the same global
// batch (the all-reduce and reduce-scatter sum in another order), the threads of a rank (Kokkos
// OpenMP reductions), the Kokkos version and backend, the BLAS, the compiler. One reordering
// moves a sum by a few units of fp32 rounding (2^-24 = 6e-8 relative), and training carries that
// forward. scripts/reference_spread.py measured it on the committed references
// (inputs/references/README.md): over both host configurations (Kokkos 3.4 Serial; Kokkos 4.6
// OpenMP at 1 and 2 threads), 1, 2 and 4 ranks, all four stages and the kernels' alternatives
// (recompute, reference attention, a chunked LM head, tensor parallelism, offload, no overlap,
// one bucket, hybrid sharding, no prefetch), every loss stayed within kFp32MeasuredSpread of one
// run's, so any two within twice that. The tolerance is 25 times it, for orders not measured here
// (other BLAS kernels, FMA contraction by another compiler), and stays 7 times below what the
// smallest error tried moved the referenced losses by (a learning rate 1 % off), 170 times below
// an off-by-one warm-up.
constexpr double kFp32Tolerance = 1e-5;
constexpr double kFp32MeasuredSpread = 4.0e-7;
constexpr double kFp32LearningRateError = 7.4e-5;  // train.lr 1 % off, tiny-test step 5
constexpr double kFp32WarmupError = 1.7e-3;        // train.warmup + 1, quickstart step 10

std::string list(const std::vector<int64_t>& values) {
  std::string out;
  for (int64_t v : values) out += fmt::format("{}{}", out.empty() ? "" : ", ", v);
  return out;
}

// The record of 1-based step `step`, or nullptr when the stage did not train it.
const StepRecord* record_of(const StageResult& stage, int64_t step) {
  for (const StepRecord& r : stage.steps)
    if (r.step + 1 == step) return &r;
  return nullptr;
}

}  // namespace

double reference_tolerance(const Deck& deck) {
  check_reference_can_be_written(deck);
  return kFp32Tolerance;
}

std::string reference_tolerance_argument(const Deck& deck) {
  check_reference_can_be_written(deck);
  // Written as the file's comment, 12 columns in: lines of at most 86 characters.
  return fmt::format(
      "{:g} for fp32. Correct builds differ from the one that made this file only in the\n"
      "order of their floating-point sums (rank count at the same global batch, threads,\n"
      "Kokkos version and backend, BLAS, compiler): fp32 rounding (6e-8 per operation)\n"
      "carried through training. Over both host configurations (Kokkos 3.4 Serial; Kokkos\n"
      "4.6 OpenMP at 1 and 2 threads), 1, 2 and 4 ranks, every stage and the kernels'\n"
      "alternatives, that moved the committed references' losses by at most {:.1e} from\n"
      "one run's (inputs/references/README.md, scripts/reference_spread.py): the tolerance\n"
      "is {:.0f} times that. A learning rate 1 % off moved them by {:.1e}, an off-by-one\n"
      "warm-up by {:.1e}.",
      kFp32Tolerance, kFp32MeasuredSpread, kFp32Tolerance / kFp32MeasuredSpread,
      kFp32LearningRateError, kFp32WarmupError);
}

void check_reference_can_be_written(const Deck& deck) {
  if (!deck.train.resume.empty())
    fail(
        "--write-reference: {}: train.resume = \"{}\": a reference holds a whole run from its "
        "first step, and a resumed run does not train the steps before its checkpoint",
        deck.where("train.resume"), deck.train.resume);
  if (deck.train.precision != Precision::FP32)
    fail(
        "--write-reference: {}: train.precision = \"{}\": references are made for fp32 runs "
        "only; no tolerance has been measured for {} (inputs/references/README.md)",
        deck.where("train.precision"), precision_name(deck.train.precision),
        precision_name(deck.train.precision));
  const bool weights = module_setting(deck, "zero.quantize_weights", "none") != "none";
  if (weights || module_setting(deck, "zero.quantize_grads", "none") != "none")
    fail(
        "--write-reference: {}: references are made for runs without ZeRO++ quantization: "
        "its blocks follow the shards, so the losses depend on the rank count and sharding, and "
        "no tolerance has been measured for them",
        weights ? deck.where("zero.quantize_weights") : deck.where("zero.quantize_grads"));
  if (deck.train.steps < 1)
    fail("--write-reference: {}: train.steps = 0: a reference needs at least one step",
         deck.where("train.steps"));
}

std::vector<int64_t> reference_steps(int64_t steps) {
  std::vector<int64_t> out = {1, (steps + 1) / 2, steps};
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Reference make_reference(const Deck& deck, int ranks, const std::vector<StageResult>& stages,
                         const ReferenceOrigin& origin) {
  Reference r;
  r.deck = origin.deck;
  r.command = origin.command;
  r.build = origin.build;
  r.settings = loss_settings(deck, ranks);
  r.tolerance = reference_tolerance(deck);
  r.tolerance_argument = reference_tolerance_argument(deck);
  r.steps = reference_steps(deck.train.steps);
  for (const StageResult& stage : stages) {
    ReferenceStage losses{stage.stage, {}};
    for (int64_t step : r.steps) {
      const StepRecord* record = record_of(stage, step);
      ZM_ASSERT(record != nullptr, "stage {} has no record of step {}", stage.stage, step);
      losses.loss.push_back(record->loss);
    }
    r.stages.push_back(losses);
  }
  std::sort(r.stages.begin(), r.stages.end(),
            [](const ReferenceStage& a, const ReferenceStage& b) { return a.stage < b.stage; });
  return r;
}

LossComparison compare_losses(const Reference& reference, const std::vector<StageResult>& stages) {
  LossComparison c;
  for (const StageResult& stage : stages) {
    const ReferenceStage* expected = reference.find_stage(stage.stage);
    ZM_ASSERT(expected != nullptr, "the reference has no stage {} (checked before training)",
              stage.stage);
    for (size_t i = 0; i < reference.steps.size(); ++i) {
      const int64_t step = reference.steps[i];
      const StepRecord* record = record_of(stage, step);
      if (!record) {
        c.unreached.push_back(fmt::format("stage {} step {}", stage.stage, step));
        continue;
      }
      const double want = expected->loss[i], got = record->loss;
      // A non-finite loss is a miss whatever the tolerance (NaN compares false with anything).
      const double relative = std::isfinite(got) ? std::fabs(got - want) / std::fabs(want) : NAN;
      ++c.checked;
      if (std::isfinite(relative) && (c.checked == 1 || relative > c.largest)) {
        c.largest = relative;
        c.largest_stage = stage.stage;
        c.largest_step = step;
      }
      if (relative <= reference.tolerance) continue;
      ++c.misses;
      c.lines.push_back(fmt::format(
          "MISS at stage {}, step {}: expected loss {}, got {}, relative difference {:.3g} > "
          "tolerance {:g}",
          stage.stage, step, want, got, relative, reference.tolerance));
    }
  }
  std::string trained;
  for (const StageResult& stage : stages)
    trained += fmt::format("{}{}", trained.empty() ? "" : ", ", stage.stage);
  if (c.misses > 0) {
    c.lines.push_back(fmt::format("failed: {} of {} losses outside the relative tolerance {:g}",
                                  c.misses, c.checked, reference.tolerance));
  } else if (!c.unreached.empty()) {
    std::string steps;
    for (const std::string& s : c.unreached) steps += (steps.empty() ? "" : ", ") + s;
    c.lines.push_back(fmt::format(
        "not completed: the run stopped before {}; the {} losses it reached are within the "
        "relative tolerance {:g}",
        steps, c.checked, reference.tolerance));
  } else if (c.checked > 0) {
    c.lines.push_back(fmt::format(
        "passed: {} losses (stage{} {}, steps {}) within the relative tolerance {:g}; the largest "
        "relative difference {:.3g} (stage {}, step {})",
        c.checked, stages.size() == 1 ? "" : "s", trained, list(reference.steps),
        reference.tolerance, c.largest, c.largest_stage, c.largest_step));
  }
  return c;
}

}  // namespace zm
