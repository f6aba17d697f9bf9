// The module's registration (core/modules.hpp): hpZ (secondary_shards.hpp), its deck keys and their
// checks, the strategies it gives a run's collectives, and the closing lines' note of qgZ's
// all-to-alls.
#include <fmt/format.h>

#include "core/deck_keys.hpp"
#include "core/error.hpp"
#include "core/stage_spec.hpp"
#include "core/validate.hpp"
#include "modules/zeropp/all_to_all_figures.hpp"
#include "modules/zeropp/cross_node_figures.hpp"
#include "modules/zeropp/secondary_shards.hpp"
#include "modules/zeropp/strategies.hpp"
#include "plan/plan_extensions.hpp"
#include "plan/run_extensions.hpp"

namespace zm {

namespace {

const char* const kModule = "zeropp";

}  // namespace

ZeroppOptions zeropp_options(const Deck& deck) {
  ZeroppOptions options;
  options.quantize_weights = deck.value<std::string>("zero.quantize_weights") != "none";
  options.quantize_block = deck.value<int64_t>("zero.quantize_block");
  const std::string grads = deck.value<std::string>("zero.quantize_grads");
  options.quantize_grads = grads != "none";
  options.grad_bits = grads == "int4" ? 4 : 8;
  options.error_feedback = deck.value<bool>("zero.error_feedback");
  options.stochastic_rounding = deck.value<std::string>("zero.grad_rounding") == "stochastic";
  options.seed = deck.train.seed;
  return options;
}

namespace {

std::vector<KeySpec> keys() {
  return {
      deck_keys::choice(
          kModule, "zero", "quantize_weights", "none", {"none", "int8"},
          "stage 3 (ZeRO++ qwZ): the parameter all-gathers move \"int8\" codes with one fp32 "
          "scale per zero.quantize_block elements, dequantized into the compute precision on "
          "arrival (the master weights are never quantized); \"none\" gathers the compute type"),
      deck_keys::integer(kModule, "zero", "quantize_block", 2048, 1, 16777216,
                         "elements per quantization block (one fp32 scale each) of "
                         "zero.quantize_weights and zero.quantize_grads (even for \"int4\")"),
      deck_keys::choice(
          kModule, "zero", "quantize_grads", "none", {"none", "int8", "int4"},
          "stages 1-3 (ZeRO++ qgZ): the gradient reduce-scatter becomes a quantized all-to-all "
          "within the shard group, then (hybrid sharding) across the groups, with one fp32 scale "
          "per zero.quantize_block elements, summed in fp32; \"none\" reduces the compute type"),
      deck_keys::boolean(kModule, "zero", "error_feedback", false,
                         "zero.quantize_grads: each rank keeps the quantization error of its own "
                         "gradients and adds it to the next ones it quantizes"),
      deck_keys::choice(kModule, "zero", "grad_rounding", "nearest", {"nearest", "stochastic"},
                        "zero.quantize_grads: how gradient codes round: to \"nearest\", or "
                        "\"stochastic\" (unbiased; the draws are keyed by train.seed, so runs "
                        "repeat bit for bit)"),
  };
}

// qwZ quantizes the per-unit parameter gathers: only a stage that gathers parameters has them.
void check_quantized_weights(const Deck& deck, const ZeroppOptions& options, int stage) {
  if (!options.quantize_weights || stage_spec(stage).gathers_parameters()) return;
  fail(
      "{}: zero.quantize_weights = \"{}\" needs zero.stage = 3, the stage that gathers parameters "
      "per unit; this run is stage {}{}. Expected \"none\" at stages 0-2",
      deck.where("zero.quantize_weights"), deck.value<std::string>("zero.quantize_weights"), stage,
      deck.zero.all_stages ? " (zero.stage = \"all\" runs stages 0-3)" : "");
}

// qgZ replaces the reduce-scatter of gradients: a stage that all-reduces them in buckets has
// none.
void check_quantized_grads(const Deck& deck, const ZeroppOptions& options, int stage) {
  if (options.quantize_grads && stage_spec(stage).gradients == GradientPath::AllReduce)
    fail(
        "{}: zero.quantize_grads = \"{}\" needs zero.stage 1-3, whose gradients are "
        "reduce-scattered; stage {} all-reduces them in buckets{}. Expected \"none\" at stage {}",
        deck.where("zero.quantize_grads"), deck.value<std::string>("zero.quantize_grads"), stage,
        deck.zero.all_stages ? " (zero.stage = \"all\" runs stages 0-3)" : "", stage);
}

// Two int4 codes share a byte, and no byte may span two blocks.
void check_int4_block(const Deck& deck, const ZeroppOptions& options) {
  if (options.quantize_grads && options.grad_bits == 4 && options.quantize_block % 2 != 0)
    fail(
        "{}: zero.quantize_block = {} with zero.quantize_grads = \"int4\": expected an even "
        "block (two int4 codes share a byte, and no byte may span two blocks)",
        deck.where("zero.quantize_block"), options.quantize_block);
}

// What `zeromini plan` says of the deck's compression in its header.
std::string plan_note(const Deck& deck) {
  const ZeroppOptions options = zeropp_options(deck);
  std::string note;
  if (options.quantize_grads)
    note += fmt::format(
        "  qgZ: zero.quantize_grads = \"{}\": at stages 1-3 the gradient reduce-scatters are "
        "all-to-alls of {} codes and one fp32 scale per {} elements within the group, and under "
        "hybrid sharding exchanges of the requantized group sums across the groups (column "
        "alltoall: the all-to-alls' bytes){}\n",
        deck.value<std::string>("zero.quantize_grads"),
        deck.value<std::string>("zero.quantize_grads"), options.quantize_block,
        options.error_feedback ? "; error feedback keeps a residual per padded parameter" : "");
  if (options.quantize_weights)
    note += fmt::format(
        "  qwZ: zero.quantize_weights = \"{}\": at stage 3 the parameter all-gathers move int8 "
        "codes and one fp32 scale per {} elements (~{:.3f} bytes per parameter); with a machine, "
        "quant s: their quantize and dequantize passes at its memory bandwidth\n",
        deck.value<std::string>("zero.quantize_weights"), options.quantize_block,
        1.0 + 4.0 / static_cast<double>(options.quantize_block));
  return note;
}

// The plan's CSV: the compression settings after the all-to-all bytes, where the deck sets any
// (scripts/plot_zeropp.py matches runs by them).
PlanColumns settings_columns() {
  PlanColumns columns;
  columns.at = PlanColumnsAt::AfterAllToAll;
  columns.shown = [](const Deck& deck, const std::vector<PlanPoint>&) {
    const ZeroppOptions options = zeropp_options(deck);
    return options.any() || options.error_feedback;
  };
  columns.header = ",quantize_weights,quantize_grads,error_feedback";
  columns.row = [](const Deck& deck, const PlanPoint&, bool) {
    return fmt::format(",{},{},{}", deck.value<std::string>("zero.quantize_weights"),
                       deck.value<std::string>("zero.quantize_grads"),
                       deck.value<bool>("zero.error_feedback"));
  };
  return columns;
}

}  // namespace

void register_module_zeropp() {
  add_secondary_shards();
  add_deck_keys(keys());
  add_validation([](const Deck& deck, const RunShape& shape, Validation purpose) {
    const ZeroppOptions options = zeropp_options(deck);
    // The planner prices qwZ and qgZ only at the stages that use them, so it does not refuse
    // them at the others (`zeromini plan` says so in its header).
    if (purpose == Validation::Run) {
      check_quantized_weights(deck, options, shape.stage);
      check_quantized_grads(deck, options, shape.stage);
    }
    check_int4_block(deck, options);
  });
  add_plan_note(plan_note);
  add_plan_columns(settings_columns());
  add_cross_node_figures();  // after the settings' columns: the CSV's cross_node_bytes follows them
  add_run_configurer([](const Deck& deck, int, RunExtensions& extensions) {
    if (auto provider = zeropp_strategies(zeropp_options(deck)))
      extensions.strategies.push_back(std::move(provider));
  });
  add_training_extension(make_all_to_all_figures);
}

}  // namespace zm
