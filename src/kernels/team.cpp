#include "kernels/team.hpp"

#include <algorithm>

namespace zm::kernels {

namespace {
TeamShape g_team_shape = kDefaultTeamShape;
}  // namespace

TeamShape team_shape() {
  return g_team_shape;
}

void set_team_shape(TeamShape shape) {
  g_team_shape = shape;
}

TeamPolicy team_policy(int64_t league) {
  int team_size = g_team_shape.team_size;
  // A host team is made of the pool's threads: no more of them than the pool has.
  if (kHostExecution) team_size = std::min(team_size, ExecSpace().concurrency());
  return TeamPolicy(league, team_size, g_team_shape.vector_length);
}

}  // namespace zm::kernels
