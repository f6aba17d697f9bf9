// The team shape a test's kernels run with. ZEROMINI_TEAM_SHAPE=TxV (T threads x V vector lanes
// per team) runs them in larger teams than the host's default (the GPU code paths, here with
// OpenMP threads); without it, the backend's kDefaultTeamShape. Read from the environment once,
// at the first call (test_main.cpp makes that call before any test runs, and rejects a shape the
// backend cannot give); tests pass the value to the kernels, models and trainers they build.
#pragma once

#include <optional>

#include "kernels/team_shape.hpp"

namespace zm::testing {

// "TxV" with T, V >= 1; nothing for any other text.
std::optional<kernels::TeamShape> parse_team_shape(const char* text);

kernels::TeamShape test_team_shape();

}  // namespace zm::testing
