#include "modules/reference_check/reference_settings.hpp"

#include <fmt/format.h>

#include <map>
#include <string>

#include "core/deck_keys.hpp"
#include "core/error.hpp"
#include "core/precision.hpp"
#include "core/zero_mesh.hpp"

// Which settings decide the losses. A reference lists them and a run with any of them different
// is refused; everything else may differ, because it changes how a run is carried out, not what
// it computes: the same sums, in another order at most, which is what a check must tolerate
// anyway (inputs/references/README.md measured those that a committed reference can meet):
//   zero.stage            every stage trains the same model on the same data; the reference has
//                         each stage's losses, and a run is compared stage by stage
//   zero.bucket_mb, zero.overlap, zero.prefetch
//                         in what pieces and when the collectives run, not what they sum
//   zero.shard_size, zero.secondary_shard_size, zero.ranks_per_node
//                         which ranks hold which shard (hybrid sharding, hpZ)
//   zero.offload_optimizer, zero.offload_params
//                         where AdamW runs (host or device), not what it computes
//   zero.quantize_block, zero.error_feedback, zero.grad_rounding
//                         act only with ZeRO++ quantization, which references do not cover
//                         (zero.quantize_weights and zero.quantize_grads are compared)
//   parallel.tp           splits each block's matrices over ranks: the same products summed in
//                         another order; it enters through the global batch (data-parallel ranks)
//   train.micro_batch, train.grad_accum
//                         through the global batch alone: sequence g of step s is the same at
//                         every split (train/data.hpp)
//   train.resume          a resumed run is refused by the check itself (check_reference_applies)
//   model.recompute       the same forward, computed again in backward
//   model.attention, model.classifier_chunk
//                         the same functions, in tiles or chunks
//   train.eval_every, train.eval_batches, train.target_loss, data.val_source
//                         evaluation (the module evaluation) reads only the held-out split,
//                         between steps, and changes no training loss
//                         (tests/modules/evaluation/test_evaluation.cpp); but with a token shard
//                         and no data.val_source it holds out the shard's tail, which shortens
//                         the training split: data.val_fraction is compared for shards, as 0
//                         where nothing is held out (and in a build without the module)
//   comm.*, output.*      the collectives' library and the watchdog; what is written where
//   the build             Kokkos version and backend, threads, BLAS, compiler: what a check is for
// A key added to the deck later is not compared until it is added below: a key that changes the
// losses then shows as a miss after training, never as a false pass.

namespace zm {

namespace {

// Sequences per optimizer step: the ranks of a model-parallel group read the same sequences.
int64_t global_batch(const Deck& deck, int ranks) {
  return deck.train.micro_batch * (ranks / model_parallel_size(deck)) * deck.train.grad_accum;
}

// Whether train.reduce_precision changes anything under the deck's precision (in fp32 and tf32
// both choices sum in fp32).
bool reduce_precision_matters(Precision precision) {
  return make_precision_policy(precision, ReducePrecision::Compute).reduce !=
         make_precision_policy(precision, ReducePrecision::FP32).reduce;
}

// How the run's global batch is made, and what would make the reference's.
std::string global_batch_advice(const Deck& deck, int ranks, const std::string& wanted) {
  const int64_t dp = ranks / model_parallel_size(deck);
  return fmt::format(
      " (train.micro_batch {} x {} data-parallel rank{} x train.grad_accum {}): set "
      "train.micro_batch or train.grad_accum, or the rank count, so that the product is {}",
      deck.train.micro_batch, dp, dp == 1 ? "" : "s", deck.train.grad_accum, wanted);
}

std::string run_origin(const Deck& deck, const std::string& key) {
  if (key == "global_batch") return "";
  return fmt::format(" ({})", deck.where(key));
}

}  // namespace

std::vector<ReferenceSetting> loss_settings(const Deck& deck, int ranks) {
  const ModelConfig& m = deck.model;
  const TrainConfig& t = deck.train;
  std::vector<ReferenceSetting> s = {
      {"global_batch", integer_setting_text(global_batch(deck, ranks)),
       "sequences per step: train.micro_batch x data-parallel ranks x train.grad_accum"},
      {"model.layers", integer_setting_text(m.layers), ""},
      {"model.heads", integer_setting_text(m.heads), ""},
      {"model.dim", integer_setting_text(m.dim), ""},
      {"model.vocab", integer_setting_text(m.vocab), ""},
      {"model.seq_len", integer_setting_text(m.seq_len), ""},
      {"train.steps", integer_setting_text(t.steps), "the cosine schedule ends at the last step"},
      {"train.lr", float_setting_text(t.lr), ""},
      {"train.min_lr_ratio", float_setting_text(t.min_lr_ratio), ""},
      {"train.warmup", integer_setting_text(t.warmup), ""},
      {"train.weight_decay", float_setting_text(t.weight_decay), ""},
      {"train.grad_clip", float_setting_text(t.grad_clip), ""},
      {"train.beta1", float_setting_text(t.beta1), ""},
      {"train.beta2", float_setting_text(t.beta2), ""},
      {"train.eps", float_setting_text(t.eps), ""},
      {"train.seed", integer_setting_text(t.seed), "initial parameters and synthetic data"},
      {"train.precision", string_setting_text(precision_name(t.precision)), ""},
  };
  if (reduce_precision_matters(t.precision))
    s.push_back({"train.reduce_precision",
                 string_setting_text(reduce_precision_name(t.reduce_precision)), ""});
  // A build without the compression's module runs uncompressed, as "none".
  for (const char* key : {"zero.quantize_weights", "zero.quantize_grads"})
    s.push_back({key, string_setting_text(module_setting(deck, key, "none")), ""});
  s.push_back({"data.source", string_setting_text(deck.data.source),
               "a token shard is taken to be the same file"});
  if (deck.data.source != "synthetic") {
    // A build without the evaluation module holds nothing out.
    const bool holds_out = module_setting(deck, "train.eval_every", "0") != "0" &&
                           module_setting(deck, "data.val_source", "").empty();
    const double fraction =
        holds_out ? std::stod(module_setting(deck, "data.val_fraction", "0")) : 0.0;
    s.push_back({"data.val_fraction", float_setting_text(fraction),
                 "the shard's tail held out of training for evaluation (0: none)"});
  }
  return s;
}

void check_reference_applies(const Reference& reference, const std::string& file, const Deck& deck,
                             int ranks) {
  if (!deck.train.resume.empty())
    fail(
        "--check-reference {}: {}: train.resume = \"{}\": a check compares a whole run from its "
        "first step, and a resumed run does not train the steps before its checkpoint",
        file, deck.where("train.resume"), deck.train.resume);

  // Both sides' keys: one the reference has and this run lacks (or the reverse) differs too.
  std::map<std::string, std::string> theirs, ours;
  for (const ReferenceSetting& s : reference.settings) theirs[s.key] = s.value;
  for (const ReferenceSetting& s : loss_settings(deck, ranks)) ours[s.key] = s.value;
  std::map<std::string, std::string> keys;
  for (const auto& [key, value] : theirs) keys[key];
  for (const auto& [key, value] : ours) keys[key];
  std::string differences;
  for (const auto& [key, unused] : keys) {
    const auto a = theirs.find(key), b = ours.find(key);
    if (a != theirs.end() && b != ours.end() && a->second == b->second) continue;
    const std::string expected = a == theirs.end() ? "(none)" : a->second;
    const std::string got = b == ours.end() ? "(none: not a setting that decides the losses here)"
                                            : b->second + run_origin(deck, key);
    differences += fmt::format("\n  {}: the reference's {}, this run's {}", key, expected, got);
    if (key == "global_batch") differences += global_batch_advice(deck, ranks, expected);
    if (key == "train.steps" && deck.train.steps < reference.steps.back())
      differences +=
          fmt::format(" (this run would not reach the referenced step {})", reference.steps.back());
  }
  if (!differences.empty())
    fail(
        "--check-reference {}: this run's settings differ from the reference's, so their losses "
        "cannot be compared:{}\nRun with the reference's settings, or make a reference for "
        "these with --write-reference.",
        file, differences);

  if (reference.steps.back() > deck.train.steps)
    fail("--check-reference {}: the referenced step {} is beyond train.steps = {} ({})", file,
         reference.steps.back(), deck.train.steps, deck.where("train.steps"));
  for (int stage : deck.stages())
    if (!reference.find_stage(stage)) {
      std::string has;
      for (const ReferenceStage& s : reference.stages)
        has += fmt::format("{}{}", has.empty() ? "" : ", ", s.stage);
      fail(
          "--check-reference {}: zero.stage {} ({}): the reference has no losses for stage {}, "
          "only for {}",
          file, stage, deck.where("zero.stage"), stage, has);
    }
}

}  // namespace zm
