// The fault a test's environment plans (README): its kind, step and rank, read by the module's
// registration and by its parts for other modules (with_<module>/).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace zm {

// ZEROMINI_TEST_FAULT=kind on rank ZEROMINI_TEST_FAULT_RANK (default 0) at step
// ZEROMINI_TEST_FAULT_STEP (1-based: at its start, or after it for the I/O faults).
struct PlannedFault {
  std::string kind;
  int64_t step = -1;
  int rank = 0;
  bool at(int at_rank, int64_t at_step) const { return at_step == step && at_rank == rank; }
};

inline PlannedFault planned_fault() {
  PlannedFault plan;
  const char* kind = std::getenv("ZEROMINI_TEST_FAULT");
  const char* step = std::getenv("ZEROMINI_TEST_FAULT_STEP");
  const char* rank = std::getenv("ZEROMINI_TEST_FAULT_RANK");
  if (!kind || !step) return plan;
  plan.kind = kind;
  plan.step = std::atoll(step);
  plan.rank = rank ? std::atoi(rank) : 0;
  return plan;
}

// What the module does, on stderr as it happens (the tests' logs show it before the fault's own
// message).
inline void say(const std::string& what) {
  std::fprintf(stderr, "zeromini: fault injection: %s\n", what.c_str());
  std::fflush(stderr);
}

}  // namespace zm
