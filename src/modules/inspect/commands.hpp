// The module's two subcommands of zeromini (train/command_extensions.hpp: Subcommand):
//   zeromini inspect FILE         prints what a results file or a checkpoint holds
//   zeromini export CHECKPOINT OUT  writes its consolidated fp32 parameters with GPT-2 names
#pragma once

#include <memory>

#include "train/command_extensions.hpp"

namespace zm {

std::unique_ptr<Subcommand> make_inspect_command();
std::unique_ptr<Subcommand> make_export_command();

}  // namespace zm
