#include "common/test_team_shape.hpp"

#include <cstdio>
#include <cstdlib>

namespace zm::testing {

std::optional<kernels::TeamShape> parse_team_shape(const char* text) {
  int threads = 0, lanes = 0;
  if (std::sscanf(text, "%dx%d", &threads, &lanes) != 2 || threads < 1 || lanes < 1)
    return std::nullopt;
  return kernels::TeamShape{threads, lanes};
}

kernels::TeamShape test_team_shape() {
  static const kernels::TeamShape shape = [] {
    const char* text = std::getenv("ZEROMINI_TEAM_SHAPE");
    if (!text) return kernels::kDefaultTeamShape;
    return parse_team_shape(text).value_or(kernels::kDefaultTeamShape);
  }();
  return shape;
}

}  // namespace zm::testing
