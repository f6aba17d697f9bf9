#include "train/fault_injection.hpp"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace zm {

Fault injected_fault(int rank, int64_t step) {
  static const char* kind = std::getenv("ZEROMINI_TEST_FAULT");
  if (!kind) return Fault::None;
  static const char* at_step = std::getenv("ZEROMINI_TEST_FAULT_STEP");
  static const char* at_rank = std::getenv("ZEROMINI_TEST_FAULT_RANK");
  if (!at_step || std::atoll(at_step) != step + 1) return Fault::None;
  if ((at_rank ? std::atoi(at_rank) : 0) != rank) return Fault::None;
  if (std::strcmp(kind, "kill") == 0) return Fault::Kill;
  if (std::strcmp(kind, "stall") == 0) return Fault::Stall;
  if (std::strcmp(kind, "nan") == 0) return Fault::NaN;
  if (std::strcmp(kind, "error") == 0) return Fault::Error;
  return Fault::None;
}

void enact_fault(Fault fault) {
  if (fault == Fault::Kill) {
    std::fprintf(stderr, "zeromini: fault injection: this rank kills itself\n");
    std::fflush(stderr);
    std::raise(SIGKILL);
  }
  if (fault == Fault::Stall) {
    std::fprintf(stderr, "zeromini: fault injection: this rank stalls\n");
    std::fflush(stderr);
    for (;;) pause();
  }
  if (fault == Fault::Error) throw std::logic_error("fault injection: an internal error");
}

}  // namespace zm
