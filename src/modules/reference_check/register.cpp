// The module's registration (core/modules.hpp): its two options of `zeromini run`.
#include "modules/reference_check/run_reference.hpp"

namespace zm {

void register_module_reference_check() {
  add_run_command_extension(make_reference_run());
}

}  // namespace zm
