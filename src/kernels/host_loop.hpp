// The element loop of the kernels over state in host memory: the host threads over chunks of
// elements (statically scheduled), each chunk one plain loop that the compiler vectorises.
#pragma once

#include <cstdint>

#include "core/compat.hpp"
#include "kernels/team.hpp"

namespace zm::kernels {

// body(i) for i in [0, n); returns when all are done.
template <typename F>
void for_each_on_host(const char* name, int64_t n, const F& body) {
  if (n <= 0) return;
  using Policy = Kokkos::RangePolicy<Kokkos::DefaultHostExecutionSpace,
                                     Kokkos::Schedule<Kokkos::Static>, Kokkos::IndexType<int64_t>>;
  const int64_t chunks = (n + kElementChunk - 1) / kElementChunk;
  Kokkos::parallel_for(name, Policy(0, chunks), [=](int64_t chunk) {
    const int64_t begin = chunk * kElementChunk;
    const int64_t end = begin + kElementChunk < n ? begin + kElementChunk : n;
    for (int64_t i = begin; i < end; ++i) body(i);
  });
  Kokkos::DefaultHostExecutionSpace().fence();
}

}  // namespace zm::kernels
