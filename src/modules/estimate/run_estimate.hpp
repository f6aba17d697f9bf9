// Before the first step: the planner's estimate of one step and of the whole run, on this
// machine. A deck that will compute for hours (model.seq_len = 1048576 on the tiny deck passes
// the memory check where the attention kernels are O(T) in memory) says so before it starts, and
// names the key that made it long.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/deck.hpp"
#include "plan/machine.hpp"

namespace zm {

// The deck key: seconds above which a run's estimate warns (0: never).
inline constexpr const char* kLongRunKey = "output.long_run_s";
double long_run_seconds(const Deck& deck);

struct RunEstimate {
  std::string machine;               // where its figures came from
  std::vector<double> step_seconds;  // per stage of deck.stages(): the planner's overlapped step
  double run_seconds = 0;            // every stage's train.steps
  // The key whose value at its default would shorten the run most, when the run is long: ""
  // when no single key does (the deck as a whole is large), with the run's estimate at it.
  std::string long_key;
  double run_seconds_at_default = 0;
};

RunEstimate estimate_run(const Deck& deck, const Machine& machine, int64_t ranks,
                         const std::string& machine_source);

// Rank 0's lines before the first step; one warning line when the run is estimated above
// output.long_run_s.
void report_run_estimate(const Deck& deck, const RunEstimate& estimate);

// "42 s", "3.5 min", "2.1 h", "4.0 d".
std::string human_seconds(double seconds);

}  // namespace zm
