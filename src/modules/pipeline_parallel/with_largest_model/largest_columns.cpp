// With the module largest_model: what the --pp axis adds to `zeromini plan --largest` (its CSV
// columns and the closing note's sentence). Built when both modules are
// (cmake/ZeroMiniModules.cmake: a module's with_<other>/ folder).
#include <fmt/format.h>

#include "modules/largest_model/largest.hpp"
#include "plan/planner.hpp"

namespace zm {

void register_module_pipeline_parallel_with_largest_model() {
  LargestAxisColumns columns;
  columns.option = "--pp";
  columns.header = ",pp,pipeline_stage,pipeline_bytes,pipeline_bubble";
  columns.cells = [](int64_t pp, const PlanPoint* p) {
    if (!p) return fmt::format(",{},,,", pp);
    const auto bubble = p->figures.find("pipeline_bubble");
    const auto bytes = p->figures.find("pipeline_bytes");
    return fmt::format(",{},{},{:.0f},{}", pp, p->part,
                       bytes == p->figures.end() ? 0.0 : bytes->second,
                       bubble == p->figures.end() ? "" : fmt::format("{:.4f}", bubble->second));
  };
  columns.note =
      "pp: parallel.pp, pp devices (tp apart) hold consecutive blocks (1F1B over\n"
      "train.grad_accum micro-batches), the depth a multiple of pp; each cell is its fullest\n"
      "stage's memory, and its step time holds the bubble.";
  add_largest_axis_columns(std::move(columns));
}

}  // namespace zm
