// Output from rank 0 only (progress lines, tables), and from any rank for errors.
#pragma once

#include <fmt/format.h>

#include <cstdio>

namespace zm {

// Set once after MPI_Init; printing before that goes to every rank.
inline int g_log_rank = 0;
inline void set_log_rank(int rank) {
  g_log_rank = rank;
}
inline bool log_is_root() {
  return g_log_rank == 0;
}

template <typename... Args>
void log_root(fmt::format_string<Args...> format, Args&&... args) {
  if (!log_is_root()) return;
  fmt::print(stdout, format, std::forward<Args>(args)...);
  std::fflush(stdout);
}

template <typename... Args>
void log_error(fmt::format_string<Args...> format, Args&&... args) {
  fmt::print(stderr, format, std::forward<Args>(args)...);
  std::fflush(stderr);
}

}  // namespace zm
