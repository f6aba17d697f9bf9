#include <fmt/format.h>

#include "comm/runtime.hpp"
#include "commands.hpp"
#include "io/inspect.hpp"

namespace zm::cli {

// Both run as one process (MPI starts as a singleton without mpiexec): checkpoint verification
// uses MPI. They read and write files only, so no device is started: they work without a GPU.
int inspect(int& argc, char**& argv, const std::string& file) {
  Runtime runtime(argc, argv, Runtime::Devices::None);
  fmt::print("{}", describe_hdf5(file, runtime.watchdog()));
  return 0;
}

int export_checkpoint(int& argc, char**& argv, const std::string& checkpoint,
                      const std::string& out) {
  Runtime runtime(argc, argv, Runtime::Devices::None);
  const int tensors = export_parameters(checkpoint, out, runtime.watchdog());
  fmt::print("{}: {} tensors exported from {}\n", out, tensors, checkpoint);
  return 0;
}

}  // namespace zm::cli
