#include "modules/inspect/commands.hpp"

#include <fmt/format.h>

#include "comm/runtime.hpp"
#include "modules/inspect/inspect.hpp"

namespace zm {

namespace {

// Both run as one process (MPI starts as a singleton without mpiexec): checkpoint verification
// uses MPI. They read and write files only, so no device is started: they work without a GPU.
class InspectCommand final : public Subcommand {
 public:
  std::string name() const override { return "inspect"; }
  std::string help() const override {
    return "Print what a results file or checkpoint (HDF5) holds";
  }
  std::vector<CommandArgument> arguments() override {
    return {{"file", "results.h5 or checkpoints/step_*.h5", &file_}};
  }
  int run(int& argc, char**& argv) override {
    Runtime runtime(argc, argv, Runtime::Devices::None);
    fmt::print("{}", describe_hdf5(file_, runtime.watchdog()));
    return 0;
  }

 private:
  std::string file_;
};

class ExportCommand final : public Subcommand {
 public:
  std::string name() const override { return "export"; }
  std::string help() const override {
    return "Write a checkpoint's consolidated fp32 parameters with GPT-2 tensor names";
  }
  std::vector<CommandArgument> arguments() override {
    return {{"checkpoint", "Checkpoint file", &checkpoint_}, {"out", "Output HDF5 file", &out_}};
  }
  int run(int& argc, char**& argv) override {
    Runtime runtime(argc, argv, Runtime::Devices::None);
    const int tensors = export_parameters(checkpoint_, out_, runtime.watchdog());
    fmt::print("{}: {} tensors exported from {}\n", out_, tensors, checkpoint_);
    return 0;
  }

 private:
  std::string checkpoint_;
  std::string out_;
};

}  // namespace

std::unique_ptr<Subcommand> make_inspect_command() {
  return std::make_unique<InspectCommand>();
}

std::unique_ptr<Subcommand> make_export_command() {
  return std::make_unique<ExportCommand>();
}

}  // namespace zm
