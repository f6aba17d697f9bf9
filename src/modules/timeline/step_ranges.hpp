// Step lists, the form of output.trace_steps: "2", "2-3", "2-3,10" (or an integer). Kept as
// ranges, so that "1-1000000000" costs nothing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/deck_schema.hpp"

namespace zm {

// Steps first..last (1-based, inclusive).
struct StepRange {
  int64_t first = 0, last = 0;
};
// Parses a step list ("2", "2-3,10"); returns "" and fills `out`, or what is wrong with it.
std::string parse_step_ranges(const std::string& text, std::vector<StepRange>* out);
// The deck's check of a step-list key (deck_keys::custom): "" or what is wrong with the value.
std::string check_step_list(const deck_detail::RawValue& value);

}  // namespace zm
