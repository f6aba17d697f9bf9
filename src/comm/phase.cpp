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
  spanned_ = spec_.reports_span && context_.spans && context_.spans->observing();
  if (spanned_) begin_ = context_.spans->mark();
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
  if (spanned_)
    context_.spans->span(spec_.span_kind, spec_.span_name.empty() ? spec_.region : spec_.span_name,
                         spec_.span_unit, begin_, context_.spans->mark());
  Watchdog* watchdog = context_.watchdog;
  if (watchdog && !spec_.wait.empty()) watchdog->leave();
  if (region_) Kokkos::Profiling::popRegion();
  if (watchdog && !spec_.watch.empty()) watchdog->set_phase(std::move(previous_watch_));
}

}  // namespace zm
