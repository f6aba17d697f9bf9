// The shape of the teams a kernel launches, passed by the caller (the model and the engine hold
// one, tests their own), so that no launch depends on hidden state.
#pragma once

#include "kernels/common.hpp"

namespace zm::kernels {

struct TeamShape {
  int team_size;      // threads per team
  int vector_length;  // vector lanes per thread
};

// One thread on the host (plain loops the compiler vectorises), 4 x 32 on a GPU. Tests run larger
// host teams to take the GPU code paths.
constexpr TeamShape kDefaultTeamShape = kHostExecution ? TeamShape{1, 1} : TeamShape{4, 32};

}  // namespace zm::kernels
