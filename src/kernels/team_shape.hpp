// The shape of the teams a kernel launches: a value the caller passes to every kernel that
// builds a team policy (the model and the engine hold one, tests pass their own), so that two
// models in one process may run different shapes and no launch depends on hidden state.
#pragma once

#include "kernels/common.hpp"

namespace zm::kernels {

struct TeamShape {
  int team_size;      // threads per team
  int vector_length;  // vector lanes per thread
};

// The shape for this backend, here and nowhere else: one thread on the host (the team helpers
// then run the plain loops the compiler vectorises), 4 x 32 on a GPU. Tests run larger host
// teams (e.g. 2 x 4 with OpenMP threads) to take the GPU code paths.
constexpr TeamShape kDefaultTeamShape = kHostExecution ? TeamShape{1, 1} : TeamShape{4, 32};

}  // namespace zm::kernels
