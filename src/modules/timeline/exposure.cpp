#include "modules/timeline/exposure.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

namespace zm {

CommExposure exposure_of(const std::vector<CollectiveTimes>& collectives) {
  CommExposure out;
  std::vector<std::pair<double, double>> intervals;
  intervals.reserve(collectives.size());
  for (const CollectiveTimes& c : collectives) {
    if (c.waited) out.exposed += std::max(0.0, c.wait_end - c.wait_begin);
    intervals.emplace_back(c.posted, std::max(c.posted, c.completed));
  }
  std::sort(intervals.begin(), intervals.end());
  double covered_to = -INFINITY;
  for (const auto& [begin, end] : intervals) {
    if (end <= covered_to) continue;
    out.in_flight += end - std::max(begin, covered_to);
    covered_to = end;
  }
  return out;
}

std::array<double, kCommOps> in_flight_by_op(const std::vector<CollectiveTimes>& collectives) {
  std::array<std::vector<std::pair<double, double>>, kCommOps> intervals;
  for (const CollectiveTimes& c : collectives)
    intervals[static_cast<size_t>(c.op)].emplace_back(c.posted, std::max(c.posted, c.completed));
  std::array<double, kCommOps> seconds{};
  for (size_t op = 0; op < intervals.size(); ++op) {
    std::sort(intervals[op].begin(), intervals[op].end());
    double covered_to = -INFINITY;
    for (const auto& [begin, end] : intervals[op]) {
      if (end <= covered_to) continue;
      seconds[op] += end - std::max(begin, covered_to);
      covered_to = end;
    }
  }
  return seconds;
}

double bus_bandwidth(double ring_bytes_sent, double seconds) {
  return seconds > 0.0 ? ring_bytes_sent / seconds : NAN;
}

double overlap_efficiency(double exposed, double in_flight) {
  if (!(in_flight > 0.0)) return NAN;
  return 1.0 - exposed / in_flight;
}

void add_to_trace(Tracer& tracer, const std::vector<CollectiveTimes>& collectives) {
  if (!tracer.active()) return;
  for (const CollectiveTimes& c : collectives) {
    TraceEvent event;
    event.kind = static_cast<int32_t>(TraceKind::Collective);
    event.begin = c.posted;
    event.end = std::max(c.posted, c.completed);
    event.bytes = c.bytes;
    event.unit = c.tag.unit;
    event.op = static_cast<int32_t>(c.op);
    event.purpose = static_cast<int32_t>(c.tag.purpose);
    event.id = c.id;
    // Hybrid sharding: the collectives across shard groups are named apart from those within;
    // model parallelism: the model's own collectives apart from ZeRO's.
    const char* where = c.tag.purpose == CommPurpose::ModelParallel ? " (model-parallel)"
                        : c.inter_group                             ? " (inter-group)"
                                                                    : "";
    const std::string name = std::string(comm_op_name(c.op)) + where;
    set_event_name(event, name);
    tracer.add_resolved(event);
    if (!c.waited) continue;
    event.kind = static_cast<int32_t>(TraceKind::Wait);
    event.begin = c.wait_begin;
    event.end = std::max(c.wait_begin, c.wait_end);
    set_event_name(event, "wait " + name);
    tracer.add_resolved(event);
  }
}

}  // namespace zm
