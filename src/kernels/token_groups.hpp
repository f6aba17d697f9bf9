// The rows of a micro-batch grouped by token (on the host), so that one team sums each token's
// rows in row order, for the token-embedding gradient: no atomics, no dependence on scheduling.
#pragma once

#include <cstdint>
#include <vector>

namespace zm::kernels {

// rows[starts[u] .. starts[u + 1]) are the rows (b * T + t, ascending) whose token is ids[u],
// for u < count. Device pointers.
struct TokenGroups {
  const int* ids = nullptr;     // (count)
  const int* starts = nullptr;  // (count + 1)
  const int* rows = nullptr;    // (number of rows)
  int64_t count = 0;
};

// The same on the host, built from n tokens in [0, vocab).
struct HostTokenGroups {
  std::vector<int> ids, starts, rows;
  void build(const int* tokens, int64_t n, int64_t vocab);

 private:
  std::vector<int> first_;  // scratch of the counting sort, kept between micro-batches
};

}  // namespace zm::kernels
