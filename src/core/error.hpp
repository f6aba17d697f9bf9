// Errors a user can act on: bad input, a missing file, a run that cannot fit. They carry a
// complete message (where, what was found, what was expected) and are printed without a stack.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace zm {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// An error every rank of a job raises at the same point with the same message (a deck that does
// not fit, a checkpoint every rank refuses): reported once, by rank 0, and the job ends cleanly
// instead of aborting.
class CollectiveError : public Error {
 public:
  explicit CollectiveError(const std::string& message) : Error(message) {}
};

// A write every rank agreed has failed (a full disk, a quota, permissions): reported once, by
// rank 0, and the run exits with kExitIoError after closing what it opened.
class IoError : public CollectiveError {
 public:
  explicit IoError(const std::string& message) : CollectiveError(message) {}
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

// Checks an internal invariant; a failure is a bug in zeromini, not bad input.
#define ZM_ASSERT(cond, ...)                                                                     \
  do {                                                                                           \
    if (!(cond))                                                                                 \
      throw std::logic_error(fmt::format("internal error at {}:{}: {} ({})", __FILE__, __LINE__, \
                                         #cond, fmt::format(__VA_ARGS__)));                      \
  } while (0)

}  // namespace zm
