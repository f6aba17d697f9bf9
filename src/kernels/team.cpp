#include "kernels/team.hpp"

#include <algorithm>

namespace zm::kernels {

TeamPolicy team_policy(TeamShape shape, int64_t league) {
  int team_size = shape.team_size;
  // A host team is made of the pool's threads: no more of them than the pool has.
  if (kHostExecution) team_size = std::min(team_size, ExecSpace().concurrency());
  return TeamPolicy(league, team_size, shape.vector_length);
}

}  // namespace zm::kernels
