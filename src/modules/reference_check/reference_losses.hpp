// The losses of a reference (io/reference_file.hpp): the steps it keeps, the tolerance it allows,
// a reference made from a run, and a run's losses compared with one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/deck.hpp"
#include "io/run_records.hpp"
#include "modules/reference_check/reference_file.hpp"

namespace zm {

// The relative tolerance of a reference for a run of `deck`, and the argument for it (written
// into the file). Only fp32 without ZeRO++ quantization has a measured one:
// check_reference_can_be_written refuses the rest.
double reference_tolerance(const Deck& deck);
std::string reference_tolerance_argument(const Deck& deck);

// Throws zm::Error (bad input) unless a reference can be written from a run of `deck`: a fresh
// start (no train.resume), fp32 and no ZeRO++ quantization (no tolerance has been measured for
// the others) and at least one step.
void check_reference_can_be_written(const Deck& deck);

// The steps a reference keeps for a run of `steps` steps: the first, the middle and the last
// (1-based, without repeats).
std::vector<int64_t> reference_steps(int64_t steps);

// Where a reference comes from: the deck as given, the command, the build.
struct ReferenceOrigin {
  std::string deck, command, build;
};

// The reference of a completed run of `deck` at `ranks` ranks whose stages are `stages`.
Reference make_reference(const Deck& deck, int ranks, const std::vector<StageResult>& stages,
                         const ReferenceOrigin& origin);

// A run's losses against a reference, stage by stage and step by step.
struct LossComparison {
  int checked = 0;                     // losses compared
  int misses = 0;                      // of them, outside the tolerance
  std::vector<std::string> unreached;  // "stage S step N" the run did not train (it stopped)
  double largest = 0;                  // the largest relative difference seen
  int largest_stage = 0;
  int64_t largest_step = 0;
  std::vector<std::string> lines;  // the report, one line each, without the prefix

  bool passed() const { return misses == 0 && unreached.empty() && checked > 0; }
};
LossComparison compare_losses(const Reference& reference, const std::vector<StageResult>& stages);

}  // namespace zm
