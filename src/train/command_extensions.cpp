#include "train/command_extensions.hpp"

namespace zm {

namespace {
std::vector<std::unique_ptr<RunCommandExtension>>& registry() {
  static std::vector<std::unique_ptr<RunCommandExtension>> extensions;
  return extensions;
}
}  // namespace

void add_run_command_extension(std::unique_ptr<RunCommandExtension> extension) {
  registry().push_back(std::move(extension));
}

const std::vector<std::unique_ptr<RunCommandExtension>>& run_command_extensions() {
  return registry();
}

}  // namespace zm
