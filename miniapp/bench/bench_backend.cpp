// The communicator backend of the Comm/* benchmarks: `--backend=mpi|nccl` (or `--backend mpi`) on
// zeromini-bench's command line, else ZEROMINI_BENCH_BACKEND, else mpi.
#include <cstdlib>
#include <cstring>
#include <string>

#include "bench_util.hpp"
#include "core/error.hpp"

namespace zm::bench {

namespace {

std::string& chosen_backend() {
  static std::string backend = "mpi";
  return backend;
}

#ifdef ZEROMINI_HAVE_NCCL
constexpr bool kBuildHasNccl = true;
#else
constexpr bool kBuildHasNccl = false;
#endif

void check_backend(const std::string& backend, const char* where) {
  if (backend != "mpi" && backend != "nccl")
    fail("zeromini-bench: {} is '{}'; expected mpi or nccl", where, backend);
  if (backend == "nccl" && !kBuildHasNccl)
    fail(
        "zeromini-bench: {} is nccl, but this build has no NCCL backend (configure a CUDA build "
        "where NCCL is found: cmake --preset cuda), or use mpi",
        where);
}

// Removes argv[index .. index + n) and shifts the rest (argv[argc] stays nullptr).
void remove_args(int& argc, char** argv, int index, int n) {
  for (int i = index; i + n <= argc; ++i) argv[i] = argv[i + n];
  argc -= n;
}

}  // namespace

void take_backend_option(int& argc, char** argv) {
  std::string backend;
  const char* where = "--backend";
  if (const char* env = std::getenv("ZEROMINI_BENCH_BACKEND"); env != nullptr && *env != '\0') {
    backend = env;
    where = "ZEROMINI_BENCH_BACKEND";
  }
  for (int i = 1; i < argc;) {
    if (std::strncmp(argv[i], "--backend=", 10) == 0) {
      backend = argv[i] + 10;
      where = "--backend";
      remove_args(argc, argv, i, 1);
    } else if (std::strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
      backend = argv[i + 1];
      where = "--backend";
      remove_args(argc, argv, i, 2);
    } else {
      ++i;
    }
  }
  if (backend.empty()) return;
  check_backend(backend, where);
  chosen_backend() = backend;
}

const std::string& comm_bench_backend() {
  return chosen_backend();
}

}  // namespace zm::bench
