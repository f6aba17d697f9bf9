// `zeromini plan --largest` (largest.hpp), a mode of `plan` (plan/plan_extensions.hpp: PlanMode).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/deck.hpp"
#include "modules/largest_model/largest.hpp"
#include "plan/machine.hpp"
#include "plan/plan_extensions.hpp"

namespace zm {

// Prints the table or ("csv") the CSV of the cells for the deck at each point of the plan's axes
// (`decks`, the deck's own first), with `axis` (nullptr: none).
int plan_largest(const std::vector<Deck>& decks, const Machine& machine,
                 const std::vector<int64_t>& devices, const std::vector<int>& stages,
                 const std::string& format, const LargestAxis* axis);

// The mode: --largest, the modules' axes' flags, its default devices 1, 2, 4, ..., 1024.
std::unique_ptr<PlanMode> largest_plan_mode();

}  // namespace zm
