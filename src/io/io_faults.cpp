#include "io/io_faults.hpp"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace zm {

bool io_fault_planned(const char* kind, int rank, int64_t step) {
  const char* planned = std::getenv("ZEROMINI_TEST_FAULT");
  if (!planned || std::strcmp(planned, kind) != 0) return false;
  const char* at_step = std::getenv("ZEROMINI_TEST_FAULT_STEP");
  const char* at_rank = std::getenv("ZEROMINI_TEST_FAULT_RANK");
  return at_step && std::atoll(at_step) == step && (at_rank ? std::atoi(at_rank) : 0) == rank;
}

void stop_this_process(const char* where) {
  std::fprintf(stderr, "zeromini: fault injection: this rank stops (SIGSTOP) in %s\n", where);
  std::fflush(stderr);
  std::raise(SIGSTOP);
}

}  // namespace zm
