#include "kernels/token_groups.hpp"

#include <stdexcept>
#include <string>

namespace zm::kernels {

void HostTokenGroups::build(const int* tokens, int64_t n, int64_t vocab) {
  // A counting sort, stable: each group lists its rows in order.
  first_.assign(static_cast<size_t>(vocab) + 1, 0);
  for (int64_t r = 0; r < n; ++r) {
    const int token = tokens[r];
    if (token < 0 || token >= vocab)
      throw std::out_of_range("token " + std::to_string(token) + " outside the vocabulary");
    ++first_[static_cast<size_t>(token) + 1];
  }
  ids.clear();
  starts.clear();
  for (int64_t v = 0; v < vocab; ++v) {
    const int count = first_[static_cast<size_t>(v) + 1];
    first_[static_cast<size_t>(v) + 1] = first_[static_cast<size_t>(v)] + count;
    if (count == 0) continue;
    ids.push_back(static_cast<int>(v));
    starts.push_back(first_[static_cast<size_t>(v)]);
  }
  starts.push_back(static_cast<int>(n));
  rows.resize(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r)
    rows[static_cast<size_t>(first_[static_cast<size_t>(tokens[r])]++)] = static_cast<int>(r);
}

}  // namespace zm::kernels
