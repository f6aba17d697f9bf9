#include "modules/timeline/trace.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include "core/compat.hpp"

namespace zm {

TraceKind trace_kind(SpanKind kind) {
  switch (kind) {
    case SpanKind::Step:
      return TraceKind::Step;
    case SpanKind::Compute:
      return TraceKind::Compute;
    case SpanKind::Io:
      return TraceKind::Io;
    case SpanKind::Transfer:
      return TraceKind::Transfer;
    case SpanKind::Storage:
      return TraceKind::Storage;
    case SpanKind::ForwardOnly:
      break;
  }
  return TraceKind::Evaluation;
}

void set_event_name(TraceEvent& event, const std::string& text) {
  const size_t n = std::min(text.size(), sizeof(event.name) - 1);
  std::memcpy(event.name, text.data(), n);
  event.name[n] = '\0';
}

void Tracer::configure(bool enabled, std::vector<StepRange> steps, int rank) {
  enabled_ = enabled;
  steps_ = std::move(steps);
  rank_ = rank;
  active_ = false;
}

void Tracer::begin_step(int stage, int64_t step) {
  resolve_stamps();  // before the new epoch reuses their events
  first_mark_ += static_cast<int64_t>(marks_.size());
  marks_.clear();
  stage_ = stage;
  step_ = static_cast<int32_t>(step);
  micro_ = -1;
  active_ = enabled_ && std::any_of(steps_.begin(), steps_.end(), [step](const StepRange& r) {
              return r.first <= step && step <= r.last;
            });
  if (active_) clock_.begin_epoch();
}

SpanMark Tracer::mark() {
  marks_.push_back(clock_.compute_stamp());
  return SpanMark{first_mark_ + static_cast<int64_t>(marks_.size()) - 1};
}

void Tracer::span(SpanKind kind, const std::string& name, int32_t unit, SpanMark begin,
                  SpanMark end) {
  // A span begun in an earlier window has no stamp left to resolve.
  if (!active_ || begin.id < first_mark_ || end.id < first_mark_) return;
  add(trace_kind(kind), name, marks_[static_cast<size_t>(begin.id - first_mark_)],
      marks_[static_cast<size_t>(end.id - first_mark_)], unit);
}

void Tracer::host_span(SpanKind kind, const std::string& name, int32_t unit, double begin,
                       double end) {
  add(trace_kind(kind), name, Stamp{begin, -1, 0, nullptr}, Stamp{end, -1, 0, nullptr}, unit);
}

void Tracer::add(TraceKind kind, const std::string& name, Stamp begin, Stamp end, int32_t unit) {
  if (!active_) return;
  Pending p;
  p.event.kind = static_cast<int32_t>(kind);
  p.event.stage = stage_;
  p.event.step = step_;
  p.event.unit = unit;
  p.event.micro = kind == TraceKind::Compute ? micro_ : -1;
  p.event.rank = rank_;
  set_event_name(p.event, name);
  p.begin = begin;
  p.end = end;
  pending_.push_back(p);
}

void Tracer::add_resolved(TraceEvent event) {
  if (!active_) return;
  event.stage = stage_;
  event.step = step_;
  event.rank = rank_;
  events_.push_back(event);
}

void Tracer::resolve_stamps() {
  for (Pending& p : pending_) {
    p.event.begin = clock_.resolve(p.begin);
    p.event.end = clock_.resolve(p.end);
    events_.push_back(p.event);
  }
  pending_.clear();
}

std::vector<TraceEvent> Tracer::take() {
  resolve_stamps();
  active_ = false;
  std::vector<TraceEvent> out;
  out.swap(events_);
  std::sort(out.begin(), out.end(),
            [](const TraceEvent& a, const TraceEvent& b) { return a.begin < b.begin; });
  return out;
}

}  // namespace zm
