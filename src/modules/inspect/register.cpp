// The module's registration (core/modules.hpp): its two subcommands, in the order `zeromini
// --help` lists them.
#include "modules/inspect/commands.hpp"

namespace zm {

void register_module_inspect() {
  add_subcommand(make_inspect_command());
  add_subcommand(make_export_command());
}

}  // namespace zm
