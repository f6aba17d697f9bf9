#include "modules/estimate/run_estimate.hpp"

#include <fmt/format.h>

#include <vector>

#include "core/error.hpp"
#include "core/log.hpp"
#include "plan/planner.hpp"

namespace zm {

namespace {

double run_seconds_of(const Deck& deck, const Machine& machine, int64_t ranks,
                      std::vector<double>* per_stage) {
  double total = 0;
  for (const int stage : deck.stages()) {
    const PlanPoint point = plan_point(deck, stage, ranks, &machine);
    const double step = point.step_seconds_overlapped;
    if (per_stage) per_stage->push_back(step);
    total += step * static_cast<double>(deck.train.steps) + point.added_run_seconds;
  }
  return total;
}

// The keys that size a run: where each lives in a deck. (Accessor functions rather than pointers
// to members, whose declarations nvcc's front end rewrites into ones GCC warns about.)
struct SizeKey {
  const char* name;
  int64_t& (*in)(Deck&);
  int64_t of(const Deck& deck) const { return in(const_cast<Deck&>(deck)); }  // read only
};

const std::vector<SizeKey>& size_keys() {
  static const std::vector<SizeKey> keys = {
      {"train.steps", [](Deck& d) -> int64_t& { return d.train.steps; }},
      {"model.seq_len", [](Deck& d) -> int64_t& { return d.model.seq_len; }},
      {"model.layers", [](Deck& d) -> int64_t& { return d.model.layers; }},
      {"model.dim", [](Deck& d) -> int64_t& { return d.model.dim; }},
      {"model.vocab", [](Deck& d) -> int64_t& { return d.model.vocab; }},
      {"train.micro_batch", [](Deck& d) -> int64_t& { return d.train.micro_batch; }},
      {"train.grad_accum", [](Deck& d) -> int64_t& { return d.train.grad_accum; }},
  };
  return keys;
}

}  // namespace

double long_run_seconds(const Deck& deck) {
  return deck.value<double>(kLongRunKey);
}

RunEstimate estimate_run(const Deck& deck, const Machine& machine, int64_t ranks,
                         const std::string& machine_source) {
  RunEstimate estimate;
  estimate.machine = machine_source;
  estimate.run_seconds = run_seconds_of(deck, machine, ranks, &estimate.step_seconds);
  const double long_run_s = long_run_seconds(deck);
  if (estimate.run_seconds <= long_run_s || long_run_s <= 0) return estimate;
  // The key that made it long: the one whose default value shortens the run most, by at least
  // half (model.dim keeps the deck's heads where its default divides by them).
  const Deck defaults;
  double shortest = estimate.run_seconds;
  for (const SizeKey& key : size_keys()) {
    if (key.of(deck) <= key.of(defaults)) continue;
    Deck variant = deck;
    key.in(variant) = key.of(defaults);
    if (variant.model.dim % variant.model.heads != 0) continue;
    double seconds = 0;
    try {
      seconds = run_seconds_of(variant, machine, ranks, nullptr);
    } catch (const Error&) {
      continue;  // a combination the planner refuses (e.g. a model dimension no longer divides)
    }
    if (seconds < shortest) {
      shortest = seconds;
      estimate.long_key = key.name;
      estimate.run_seconds_at_default = seconds;
    }
  }
  if (shortest > 0.5 * estimate.run_seconds) estimate.long_key.clear();
  return estimate;
}

std::string human_seconds(double seconds) {
  if (seconds < 120) return fmt::format("{:.2g} s", seconds);
  if (seconds < 7200) return fmt::format("{:.1f} min", seconds / 60);
  if (seconds < 172800) return fmt::format("{:.1f} h", seconds / 3600);
  return fmt::format("{:.1f} d", seconds / 86400);
}

void report_run_estimate(const Deck& deck, const RunEstimate& estimate) {
  std::string steps;
  const std::vector<int> stages = deck.stages();
  for (size_t i = 0; i < stages.size(); ++i)
    steps += fmt::format("{}{}", i ? ", " : "",
                         stages.size() > 1 ? fmt::format("stage {} {}", stages[i],
                                                         human_seconds(estimate.step_seconds[i]))
                                           : human_seconds(estimate.step_seconds[i]));
  log_root("Estimate (planner; machine: {}): {} per step, about {} for the run's {} step{}{}\n",
           estimate.machine, steps, human_seconds(estimate.run_seconds), deck.train.steps,
           deck.train.steps == 1 ? "" : "s", stages.size() > 1 ? " of each stage" : "");
  const double long_run_s = long_run_seconds(deck);
  if (long_run_s <= 0 || estimate.run_seconds <= long_run_s) return;
  const Deck defaults;
  if (!estimate.long_key.empty()) {
    // The deck's value and the default of the key named.
    int64_t value = 0, fallback = 0;
    for (const auto& key : size_keys())
      if (estimate.long_key == key.name) {
        value = key.of(deck);
        fallback = key.of(defaults);
      }
    log_root(
        "warning: this run is estimated at {}, longer than output.long_run_s = {}; most of it "
        "from {} = {} (at its default {}: {})\n",
        human_seconds(estimate.run_seconds), human_seconds(long_run_s), estimate.long_key, value,
        fallback, human_seconds(estimate.run_seconds_at_default));
  } else {
    log_root(
        "warning: this run is estimated at {}, longer than output.long_run_s = {} (no single "
        "key makes it long)\n",
        human_seconds(estimate.run_seconds), human_seconds(long_run_s));
  }
}

}  // namespace zm
