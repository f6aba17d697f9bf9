#include "core/fault_points.hpp"

#include <utility>

#include "core/registry.hpp"

namespace zm {

using FaultHandlerAt = std::pair<std::string, FaultHandler>;

void add_fault_handler(std::string point, FaultHandler handler) {
  registry<FaultHandlerAt>().emplace_back(std::move(point), std::move(handler));
}

void fault_point(const char* point, int rank, int64_t step, const std::any& subject) {
  for (const auto& [name, handler] : registry<FaultHandlerAt>())
    if (name == point) handler(rank, step, subject);
}

}  // namespace zm
