#include "train/command_extensions.hpp"

namespace zm {

namespace {
std::vector<std::unique_ptr<RunCommandExtension>>& registry() {
  static std::vector<std::unique_ptr<RunCommandExtension>> extensions;
  return extensions;
}

std::vector<std::unique_ptr<Subcommand>>& commands() {
  static std::vector<std::unique_ptr<Subcommand>> all;
  return all;
}
}  // namespace

void add_run_command_extension(std::unique_ptr<RunCommandExtension> extension) {
  registry().push_back(std::move(extension));
}

const std::vector<std::unique_ptr<RunCommandExtension>>& run_command_extensions() {
  return registry();
}

void add_subcommand(std::unique_ptr<Subcommand> command) {
  commands().push_back(std::move(command));
}

const std::vector<std::unique_ptr<Subcommand>>& subcommands() {
  return commands();
}

}  // namespace zm
