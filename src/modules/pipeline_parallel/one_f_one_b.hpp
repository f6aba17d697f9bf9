// The 1F1B pipeline schedule (PipeDream-Flush; Megatron-LM's pipelining without interleaving) as
// data: what each stage computes, in order, and what crosses each boundary between neighbouring
// stages, in the one order both of its stages post it. Stage s of P holds blocks of the model
// (model/layout.hpp: ModelPart); each micro-batch's activation goes forward across a boundary and
// its gradient comes back.
//
// A stage runs min(P - s - 1, m) warm-up forwards, then one forward and one backward while
// forwards remain, then the remaining backwards: it holds at most min(P - s, m) micro-batches'
// activations, and the step's idle fraction (the bubble) is (P - 1) / (m + P - 1) when forwards
// and backwards each take the same time on every stage.
#pragma once

#include <optional>
#include <vector>

namespace zm::pipeline {

enum class PipeWork { Forward, Backward };

struct PipeAction {
  PipeWork work;
  int micro;
  bool operator==(const PipeAction& o) const { return work == o.work && micro == o.micro; }
};

// Stage `stage`'s work of a step of `micro_batches`, in order.
std::vector<PipeAction> one_f_one_b(int stage, int stages, int micro_batches);
// The micro-batches whose activations a stage holds at most: min(stages - stage, m).
int in_flight_limit(int stage, int stages, int micro_batches);
// (P - 1) / (m + P - 1).
double bubble_fraction(int stages, int micro_batches);

// What crosses boundary b (between stages b and b + 1): micro-batch `micro`'s activation (b's
// output, b + 1's input) or its gradient (back from b + 1).
enum class Crossing { Activation, Gradient };
struct Transfer {
  Crossing what;
  int micro;
  bool operator==(const Transfer& o) const { return what == o.what && micro == o.micro; }
};

// Boundary b's transfers in the one order both its stages post them: the order in which stage
// b + 1 needs the activations (its forwards) and makes the gradients (its backwards). Posted in
// the same order on both sides, they pair up as collectives on the boundary's communicator.
std::vector<Transfer> boundary_order(int boundary, int stages, int micro_batches);

// One stage's way through a step: its actions, which are done, and how far it has posted on each
// boundary it has. The driver and the tests' simulation of every stage ask it what may be posted
// next: a send once the action that makes its data is done; a receive once the buffer it lands in
// is free (an activation into the slot of micro-batch i mod K, K = in_flight_limit, once the
// backward of i - K is done; a gradient once the forward of its micro-batch is done).
class StageProgress {
 public:
  enum Side { Previous = 0, Next = 1 };  // boundary stage - 1, boundary stage

  StageProgress(int stage, int stages, int micro_batches);

  const std::vector<PipeAction>& actions() const { return actions_; }
  // The next action (nullopt once all are done).
  std::optional<PipeAction> next_action() const;
  // The transfer this stage must have received before `action`, if any, and on which side.
  std::optional<std::pair<Side, Transfer>> needs(const PipeAction& action) const;
  // The slot (activation buffers) micro-batch `micro` uses.
  int slot(int micro) const { return micro % slots_; }
  int slots() const { return slots_; }
  bool has(Side side) const { return side == Previous ? stage_ > 0 : stage_ + 1 < stages_; }

  // The next transfer on `side` if it may be posted now; whether this stage sends it.
  std::optional<Transfer> postable(Side side) const;
  bool sends(Side side, const Transfer& t) const {
    return (side == Next) == (t.what == Crossing::Activation);
  }
  void posted(Side side) { ++cursor_[side]; }
  bool all_posted(Side side) const { return !has(side) || cursor_[side] == order_[side].size(); }

  void done(const PipeAction& action);  // the next action is complete
  bool is_done(PipeWork work, int micro) const;
  int in_flight() const { return forwards_ - backwards_; }
  int peak_in_flight() const { return peak_; }

 private:
  int stage_, stages_, micro_batches_, slots_;
  std::vector<PipeAction> actions_;
  size_t next_ = 0;
  std::vector<Transfer> order_[2];
  size_t cursor_[2] = {0, 0};
  int forwards_ = 0, backwards_ = 0, peak_ = 0;
};

}  // namespace zm::pipeline
