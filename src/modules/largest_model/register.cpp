// The module's registration (core/modules.hpp): the mode --largest of `zeromini plan`. The axes
// and notes of other modules come with them (their with_largest_model/ folders).
#include "modules/largest_model/plan_largest.hpp"
#include "plan/plan_extensions.hpp"

namespace zm {

void register_module_largest_model() {
  add_plan_mode(largest_plan_mode());
}

}  // namespace zm
