// The 1F1B schedule (src/modules/pipeline_parallel/one_f_one_b.hpp) run in a simulation of every
// stage of a pipeline, each a StageProgress as the driver uses it, with the driver's rules:
//   - a stage posts each boundary's transfers in the boundary's order, as StageProgress allows;
//   - a transfer completes once both stages have posted it, at the time its sender posted it;
//   - an action waits for the transfer it needs, and for the sends of its slot's previous
//     micro-batch (a slot's buffers are sent from, then reused); so does a receive into a slot.
// Every stage must finish (no deadlock), each holding at most min(P - s, m) micro-batches in
// flight, and with forward time f and backward time b the step must take (m + P - 1)(f + b): the
// bubble (P - 1) / (m + P - 1).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

#include "modules/pipeline_parallel/one_f_one_b.hpp"

namespace {

using zm::pipeline::Crossing;
using zm::pipeline::PipeAction;
using zm::pipeline::PipeWork;
using zm::pipeline::StageProgress;
using zm::pipeline::Transfer;

TEST(OneFOneB, EachStagesOrder) {
  // 4 stages, 6 micro-batches (Narayanan et al. 2021, figure 4's layout).
  const auto order = [](int stage) {
    std::string text;
    for (const PipeAction& a : zm::pipeline::one_f_one_b(stage, 4, 6))
      text += (a.work == PipeWork::Forward ? "F" : "B") + std::to_string(a.micro) + " ";
    return text;
  };
  EXPECT_EQ(order(0), "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5 ");
  EXPECT_EQ(order(1), "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 B4 B5 ");
  EXPECT_EQ(order(3), "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 ");
  // Fewer micro-batches than stages: all forwards, then all backwards.
  const auto few = zm::pipeline::one_f_one_b(0, 4, 2);
  EXPECT_EQ(few, (std::vector<PipeAction>{{PipeWork::Forward, 0},
                                          {PipeWork::Forward, 1},
                                          {PipeWork::Backward, 0},
                                          {PipeWork::Backward, 1}}));
  EXPECT_EQ(zm::pipeline::in_flight_limit(0, 4, 2), 2);
  EXPECT_DOUBLE_EQ(zm::pipeline::bubble_fraction(4, 6), 3.0 / 9.0);
}

struct Simulated {
  bool finished = false;
  double makespan = 0;
  std::vector<int> peaks;
};

// One step of P stages over m micro-batches.
Simulated simulate(int P, int m, double forward_time, double backward_time) {
  std::vector<StageProgress> stages;
  for (int s = 0; s < P; ++s) stages.emplace_back(s, P, m);
  std::vector<double> clock(static_cast<size_t>(P), 0.0);
  // Per boundary and transfer: when each side posted it (-1: not yet).
  struct Posts {
    double sender = -1, receiver = -1;
  };
  std::vector<std::map<std::pair<int, int>, Posts>> boundary(static_cast<size_t>(P));
  const auto key = [](const Transfer& t) {
    return std::make_pair(static_cast<int>(t.what), t.micro);
  };
  const auto matched = [&](int b, const Transfer& t) {
    const auto it = boundary[static_cast<size_t>(b)].find(key(t));
    return it != boundary[static_cast<size_t>(b)].end() && it->second.sender >= 0 &&
           it->second.receiver >= 0;
  };
  // The sends of the micro-batch that used `micro`'s slot before it have completed.
  const auto slot_sent = [&](int s, int micro) {
    const int before = micro - stages[static_cast<size_t>(s)].slots();
    if (before < 0) return true;
    const bool output = s + 1 >= P || matched(s, {Crossing::Activation, before});
    const bool input_grad = s == 0 || matched(s - 1, {Crossing::Gradient, before});
    return output && input_grad;
  };
  bool moved = true;
  while (moved) {
    moved = false;
    for (int s = 0; s < P; ++s) {
      StageProgress& stage = stages[static_cast<size_t>(s)];
      double& now = clock[static_cast<size_t>(s)];
      for (const auto side : {StageProgress::Previous, StageProgress::Next}) {
        while (const auto t = stage.postable(side)) {
          const bool sending = stage.sends(side, *t);
          if (!sending && t->what == Crossing::Gradient && !slot_sent(s, t->micro)) break;
          const int b = side == StageProgress::Previous ? s - 1 : s;
          Posts& posts = boundary[static_cast<size_t>(b)][key(*t)];
          (sending ? posts.sender : posts.receiver) = now;
          stage.posted(side);
          moved = true;
        }
      }
      const auto action = stage.next_action();
      if (!action) continue;
      if (action->work == PipeWork::Forward && !slot_sent(s, action->micro)) continue;
      double start = now;
      if (const auto need = stage.needs(*action)) {
        const int b = need->first == StageProgress::Previous ? s - 1 : s;
        if (!matched(b, need->second)) continue;
        start = std::max(start, boundary[static_cast<size_t>(b)][key(need->second)].sender);
      }
      now = start + (action->work == PipeWork::Forward ? forward_time : backward_time);
      stage.done(*action);
      moved = true;
    }
  }
  Simulated out;
  out.finished = true;
  for (int s = 0; s < P; ++s) {
    const StageProgress& stage = stages[static_cast<size_t>(s)];
    out.finished = out.finished && !stage.next_action() &&
                   stage.all_posted(StageProgress::Previous) &&
                   stage.all_posted(StageProgress::Next);
    out.makespan = std::max(out.makespan, clock[static_cast<size_t>(s)]);
    out.peaks.push_back(stage.peak_in_flight());
  }
  return out;
}

TEST(OneFOneB, EveryStageFinishesWithinItsActivationsAndTheBubble) {
  for (int P : {1, 2, 3, 4, 8})
    for (int m : {1, 2, 3, 4, 7, 8, 16})
      for (const auto& [f, b] : {std::pair{1.0, 1.0}, std::pair{1.0, 2.0}}) {
        const Simulated run = simulate(P, m, f, b);
        ASSERT_TRUE(run.finished) << P << " stages, " << m << " micro-batches: deadlock";
        for (int s = 0; s < P; ++s)
          EXPECT_EQ(run.peaks[static_cast<size_t>(s)], zm::pipeline::in_flight_limit(s, P, m))
              << "stage " << s << " of " << P << ", m " << m;
        // The step's time: m micro-batches' work per stage plus the bubble, whose fraction of
        // the step is (P - 1) / (m + P - 1).
        const double work = m * (f + b);
        EXPECT_DOUBLE_EQ(run.makespan, (m + P - 1) * (f + b)) << P << " stages, m " << m;
        EXPECT_DOUBLE_EQ(1.0 - work / run.makespan, zm::pipeline::bubble_fraction(P, m));
      }
}

}  // namespace
