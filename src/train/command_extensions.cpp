#include "train/command_extensions.hpp"

#include "core/registry.hpp"

namespace zm {

ZM_REGISTRY(std::unique_ptr<RunCommandExtension>, add_run_command_extension, run_command_extensions)
ZM_REGISTRY(std::unique_ptr<Subcommand>, add_subcommand, subcommands)

}  // namespace zm
