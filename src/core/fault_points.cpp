#include "core/fault_points.hpp"

#include <utility>
#include <vector>

namespace zm {

static std::vector<std::pair<std::string, FaultHandler>> fault_handlers;

void add_fault_handler(std::string point, FaultHandler handler) {
  fault_handlers.emplace_back(std::move(point), std::move(handler));
}

void fault_point(const char* point, int rank, int64_t step, const std::any& subject) {
  for (const auto& [name, handler] : fault_handlers)
    if (name == point) handler(rank, step, subject);
}

}  // namespace zm
