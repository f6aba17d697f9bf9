#include "comm/phase.hpp"

#include <utility>

#include "core/compat.hpp"
#include "core/timer.hpp"

namespace zm {

Phase::Phase(const RunContext& context, PhaseSpec spec)
    : context_(context), spec_(std::move(spec)) {
  Watchdog* watchdog = context_.watchdog;
  if (watchdog && !spec_.watch.empty()) previous_watch_ = watchdog->set_phase(spec_.watch);
  region_ = Kokkos::Profiling::profileLibraryLoaded();
  if (region_) Kokkos::Profiling::pushRegion("zeromini::" + spec_.region);
  if (watchdog && !spec_.wait.empty()) watchdog->enter(spec_.wait, kLocalRegion, spec_.wait_kind);
  traced_ = spec_.trace && context_.tracer && context_.tracer->active();
  if (traced_) begin_ = context_.tracer->stamp();
  if (spec_.seconds) {
    Kokkos::fence();
    started_ = wall_seconds();
  }
}

Phase::~Phase() {
  if (spec_.seconds) {
    Kokkos::fence();
    *spec_.seconds += wall_seconds() - started_;
  }
  if (traced_)
    context_.tracer->add(spec_.trace_kind,
                         spec_.trace_event.empty() ? spec_.region : spec_.trace_event, begin_,
                         context_.tracer->stamp(), spec_.trace_unit);
  Watchdog* watchdog = context_.watchdog;
  if (watchdog && !spec_.wait.empty()) watchdog->leave();
  if (region_) Kokkos::Profiling::popRegion();
  if (watchdog && !spec_.watch.empty()) watchdog->set_phase(std::move(previous_watch_));
}

}  // namespace zm
