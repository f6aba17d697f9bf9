// Counter-based random initialisation: value i of a tensor depends only on (seed, global index),
// so parameters are identical whatever the rank count or partition that initialises them.
#pragma once

#include <cstdint>

#include "kernels/team_shape.hpp"

namespace zm::kernels {

// x[i] = stddev * N(0,1) drawn from (seed, first_index + i); Box-Muller on a 64-bit hash.
template <typename T>
void init_normal(TeamShape shape, T* x, int64_t n, float stddev, uint64_t seed,
                 uint64_t first_index);

}  // namespace zm::kernels
