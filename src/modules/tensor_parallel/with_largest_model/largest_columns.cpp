// With the module largest_model: what the --tp axis adds to `zeromini plan --largest` (its CSV
// columns and the closing note's sentence). Built when both modules are
// (cmake/ZeroMiniModules.cmake: a module's with_<other>/ folder).
#include <fmt/format.h>

#include "modules/largest_model/largest.hpp"
#include "plan/planner.hpp"

namespace zm {

void register_module_tensor_parallel_with_largest_model() {
  LargestAxisColumns columns;
  columns.option = "--tp";
  columns.header = ",tp,tensor_parallel_bytes";
  columns.cells = [](int64_t tp, const PlanPoint* p) {
    return fmt::format(",{},{}", tp,
                       p ? fmt::format("{:.0f}", p->bytes_at_level(CommLevel::ModelParallel)) : "");
  };
  columns.note =
      "tp: parallel.tp, each tp group of consecutive devices holds 1/tp of the split\n"
      "tensors and ZeRO shards over devices / tp; the parameters are the whole model's.";
  add_largest_axis_columns(std::move(columns));
}

}  // namespace zm
