// Hierarchical parallelism for the kernels: rows (or chunks of elements) to teams, a row's
// channels to the team's threads and lanes (consecutive addresses on a GPU; reductions are
// Kokkos' team reductions, a fixed tree). A host team is one thread by default: the helpers then
// run plain loops the compiler vectorises.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/common.hpp"
#include "kernels/team_shape.hpp"

namespace zm::kernels {

// A static schedule, stated: on the host every thread gets the same contiguous share of the
// league each time (rows stay on one thread from kernel to kernel, as in gemm_host.cpp), and
// reductions join per-thread partials in thread order: the same bits run after run.
using TeamPolicy =
    Kokkos::TeamPolicy<ExecSpace, Kokkos::Schedule<Kokkos::Static>, Kokkos::IndexType<int64_t>>;
using TeamMember = TeamPolicy::member_type;

// One team of `shape` per item of `league`; a host team is made of the pool's threads, so no more
// of them than the pool has.
inline TeamPolicy team_policy(TeamShape shape, int64_t league) {
  int team_size = shape.team_size;
  if (kHostExecution) team_size = std::min(team_size, ExecSpace().concurrency());
  return TeamPolicy(league, team_size, shape.vector_length);
}

// True where a team is one host thread: the helpers then run plain loops.
KOKKOS_INLINE_FUNCTION bool team_is_one_thread(const TeamMember& team) {
  if constexpr (kHostExecution) return team.team_size() == 1;
  (void)team;
  return false;
}

template <typename F>
KOKKOS_INLINE_FUNCTION void team_for(const TeamMember& team, int64_t n, const F& body) {
  if (team_is_one_thread(team)) {
    for (int64_t i = 0; i < n; ++i) body(i);
  } else {
    Kokkos::parallel_for(Kokkos::TeamVectorRange(team, n), body);
  }
}

// Sum of term(i) for i in [0, n), to every thread of the team; a fixed order either way.
template <typename A, typename F>
KOKKOS_INLINE_FUNCTION A team_sum(const TeamMember& team, int64_t n, const F& term) {
  if (team_is_one_thread(team)) return lane_sum<A>(n, term);
  A total = A(0);
  Kokkos::parallel_reduce(
      Kokkos::TeamVectorRange(team, n), [&](int64_t i, A& acc) { acc += term(i); }, total);
  return total;
}

// Maximum of x[0..n), n >= 1, in the arithmetic type A, returned to every thread of the team.
template <typename A, typename T>
KOKKOS_INLINE_FUNCTION A team_max(const TeamMember& team, const T* x, int64_t n) {
  if (team_is_one_thread(team)) return A(lane_max(x, n));
  A maximum = A(x[0]);
  Kokkos::parallel_reduce(
      Kokkos::TeamVectorRange(team, n),
      [&](int64_t i, A& acc) { acc = A(x[i]) > acc ? A(x[i]) : acc; }, Kokkos::Max<A>(maximum));
  return maximum;
}

// body() once per team (a row's scalar results).
template <typename F>
KOKKOS_INLINE_FUNCTION void team_single(const TeamMember& team, const F& body) {
  Kokkos::single(Kokkos::PerTeam(team), body);
}

// Chunks of elements for element-wise kernels, one team each.
constexpr int64_t kElementChunk = 1024;

// body(i) for every i in [0, n): a team per chunk of kElementChunk elements.
template <typename F>
void for_each_element(TeamShape shape, const char* name, int64_t n, const F& body) {
  if (n <= 0) return;
  const int64_t chunks = (n + kElementChunk - 1) / kElementChunk;
  Kokkos::parallel_for(
      name, team_policy(shape, chunks), KOKKOS_LAMBDA(const TeamMember& team) {
        const F f = body;
        const int64_t begin = team.league_rank() * kElementChunk;
        const int64_t count = begin + kElementChunk < n ? kElementChunk : n - begin;
        team_for(team, count, [&](int64_t i) { f(begin + i); });
      });
}

}  // namespace zm::kernels
