// Paths that ctest hands to the tests in their environment (tests/*/CMakeLists.txt) rather than
// compiled in: no host path lives in a test executable, and a copy of the test tree elsewhere
// (scripts/device-kit.sh) points them at its own files.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace zm_test {

// The value of an environment variable that ctest sets; a clear failure where it is missing.
inline std::string path_from_environment(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0')
    throw std::runtime_error(std::string(name) +
                             " is not set (ctest sets it: run the test through ctest)");
  return value;
}

// The repository's inputs/ directory (decks and machine files).
inline std::string inputs_dir() {
  return path_from_environment("ZEROMINI_INPUTS_DIR");
}

// An empty directory of the system's temporary directory, named for the test and this process.
inline std::filesystem::path fresh_dir(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("zeromini-" + name + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace zm_test
