// Before the first step: the planner's estimate of one step and of the whole run, on this
// machine. A deck that will compute for hours (model.seq_len = 1048576 on the tiny deck passes
// the memory check where the attention kernels are O(T) in memory) says so before it starts, and
// names the key that made it long.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/deck.hpp"
#include "plan/machine.hpp"

namespace zm {

class Communicator;

// The machine of this job, measured at start-up in well under a second when no machine file is
// given: a short GEMM per compute precision for the sustained rate, a streaming pass for the
// memory bandwidth, and all-reduces of 4 MiB and of 4 bytes on `comm` for the links' bandwidth
// and latency (taken for the links inside and between nodes alike). Collective over `comm`; the
// figures are rank 0's, broadcast, so that every rank prices the same machine.
Machine measure_machine(Communicator& comm, int64_t nodes);

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

// While a stage's first step runs: one progress line from rank 0 if it has not finished after a
// minute (ZEROMINI_TEST_FIRST_STEP_NOTICE_S: another delay, for the tests), with the estimate, so
// that a long first step is not silence. Ends with the step (its destructor).
class FirstStepNotice {
 public:
  FirstStepNotice(int stage, int64_t step, double estimated_seconds);
  ~FirstStepNotice();
  FirstStepNotice(const FirstStepNotice&) = delete;
  FirstStepNotice& operator=(const FirstStepNotice&) = delete;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace zm
