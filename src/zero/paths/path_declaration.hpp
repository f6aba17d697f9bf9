// What a path (paths/gradient_path.hpp, paths/parameter_path.hpp) allocates on every rank, for
// the planner: element sizes come from the options' precision policy (zero_options.hpp), so any
// build prices any precision without a typed engine. What the paths post is the step's schedule
// (zero/schedule.hpp), not theirs to declare.
#pragma once

#include <vector>

#include "core/memory.hpp"

namespace zm {

struct PathDeclaration {
  std::vector<BufferSpec> buffers;  // after the model state, in the order the path allocates them
};

}  // namespace zm
