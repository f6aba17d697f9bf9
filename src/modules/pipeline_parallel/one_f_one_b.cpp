#include "modules/pipeline_parallel/one_f_one_b.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace zm::pipeline {

std::vector<PipeAction> one_f_one_b(int stage, int stages, int micro_batches) {
  ZM_ASSERT(stage >= 0 && stage < stages && micro_batches >= 1, "stage {} of {}, {} micro-batches",
            stage, stages, micro_batches);
  const int warmup = std::min(stages - stage - 1, micro_batches);
  std::vector<PipeAction> actions;
  int forward = 0, backward = 0;
  while (forward < warmup) actions.push_back({PipeWork::Forward, forward++});
  while (forward < micro_batches) {
    actions.push_back({PipeWork::Forward, forward++});
    actions.push_back({PipeWork::Backward, backward++});
  }
  while (backward < micro_batches) actions.push_back({PipeWork::Backward, backward++});
  return actions;
}

int in_flight_limit(int stage, int stages, int micro_batches) {
  return std::min(stages - stage, micro_batches);
}

double bubble_fraction(int stages, int micro_batches) {
  return static_cast<double>(stages - 1) / static_cast<double>(micro_batches + stages - 1);
}

std::vector<Transfer> boundary_order(int boundary, int stages, int micro_batches) {
  std::vector<Transfer> order;
  for (const PipeAction& a : one_f_one_b(boundary + 1, stages, micro_batches))
    order.push_back(
        {a.work == PipeWork::Forward ? Crossing::Activation : Crossing::Gradient, a.micro});
  return order;
}

StageProgress::StageProgress(int stage, int stages, int micro_batches)
    : stage_(stage),
      stages_(stages),
      micro_batches_(micro_batches),
      slots_(in_flight_limit(stage, stages, micro_batches)),
      actions_(one_f_one_b(stage, stages, micro_batches)) {
  if (has(Previous)) order_[Previous] = boundary_order(stage - 1, stages, micro_batches);
  if (has(Next)) order_[Next] = boundary_order(stage, stages, micro_batches);
}

std::optional<PipeAction> StageProgress::next_action() const {
  if (next_ == actions_.size()) return std::nullopt;
  return actions_[next_];
}

std::optional<std::pair<StageProgress::Side, Transfer>> StageProgress::needs(
    const PipeAction& action) const {
  if (action.work == PipeWork::Forward && has(Previous))
    return std::make_pair(Previous, Transfer{Crossing::Activation, action.micro});
  if (action.work == PipeWork::Backward && has(Next))
    return std::make_pair(Next, Transfer{Crossing::Gradient, action.micro});
  return std::nullopt;
}

std::optional<Transfer> StageProgress::postable(Side side) const {
  if (!has(side) || cursor_[side] == order_[side].size()) return std::nullopt;
  const Transfer t = order_[side][cursor_[side]];
  bool ready = false;
  if (sends(side, t))  // this stage's forward made the activation, its backward the gradient
    ready =
        is_done(t.what == Crossing::Activation ? PipeWork::Forward : PipeWork::Backward, t.micro);
  else if (t.what == Crossing::Activation)  // into the slot of micro - K, once that is done
    ready = t.micro < slots_ || is_done(PipeWork::Backward, t.micro - slots_);
  else  // a gradient lands in the slot its forward filled
    ready = is_done(PipeWork::Forward, t.micro);
  if (!ready) return std::nullopt;
  return t;
}

void StageProgress::done(const PipeAction& action) {
  ZM_ASSERT(next_ < actions_.size() && actions_[next_] == action, "stage {}: action out of order",
            stage_);
  ++next_;
  if (action.work == PipeWork::Forward) {
    ++forwards_;
  } else {
    ++backwards_;
  }
  peak_ = std::max(peak_, in_flight());
}

bool StageProgress::is_done(PipeWork work, int micro) const {
  // Actions complete in their order: done if it lies before the next one.
  for (size_t a = 0; a < next_; ++a)
    if (actions_[a].work == work && actions_[a].micro == micro) return true;
  return false;
}

}  // namespace zm::pipeline
