// The planner's prices of ZeRO++: qgZ's all-to-all in two hops by node, each on the link it
// crosses; qwZ's int8 gathers and their quantize and dequantize passes.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "plan/planner.hpp"
#include "plan/planner_test_util.hpp"

namespace {

using zm_test::deck_with;
using zm_test::two_link_machine;

// qgZ's all-to-all goes through each rank's own card: in two hops by node (4 nodes of 8), per 32
// segments, 7/8 of 32 in the node, then 3/4 of 4 across; the rest as without it.
TEST(PlannerZeropp, QgzHopsArePricedOnTheLinkTheyCross) {
  const double intra_bw = 400e9, inter_bw = 25e9, eight_cards = 8 * inter_bw;
  const zm::Machine m = two_link_machine(8, intra_bw, inter_bw);
  const zm::Deck plain = deck_with(3, 192, 4, "bf16");
  auto expect_seconds = [](double planned, double expected) {
    EXPECT_NEAR(planned, expected, 1e-12 * expected);
  };
  for (int stage = 1; stage <= 3; ++stage) {
    SCOPED_TRACE(fmt::format("stage {}", stage));
    zm::Deck int8 = plain;
    int8.set_value("zero.quantize_grads", std::string("int8"));
    const zm::PlanPoint q = zm::plan_point(int8, stage, 32, &m);
    const double a2a = q.bytes_per_step[static_cast<size_t>(zm::CommOp::AllToAll)];
    ASSERT_GT(a2a, 0);
    const double within = 7.0 / 8.0 * 32, across = 3.0 / 4.0 * 4;  // in segments per unit
    expect_seconds(q.comm_seconds, a2a * within / (within + across) / intra_bw +
                                       a2a * across / (within + across) / inter_bw +
                                       (zm_test::bytes_per_step_total(q) - a2a) / eight_cards);
  }
}

// qwZ: stage 3's gathers move int8 codes and a scale per block, about a quarter of fp32's bytes;
// the reduce-scatters keep theirs; the quantize and dequantize passes cost device memory traffic
// at the machine's memory bandwidth (half the time at twice the bandwidth), and the step adds
// them to compute. Other stages gather no unit and are priced as without it.
TEST(PlannerZeropp, Int8GathersCutTrafficAndPayForTheirPasses) {
  zm::Machine m = two_link_machine(8, 450e9, 50e9);
  m.memory_bandwidth = 1e12;
  const zm::Deck plain = deck_with(4, 256, 4, "fp32");
  zm::Deck int8 = plain;
  int8.set_value("zero.quantize_weights", std::string("int8"));
  const zm::PlanPoint p = zm::plan_point(plain, 3, 16, &m);
  const zm::PlanPoint q = zm::plan_point(int8, 3, 16, &m);
  const auto op = [](const zm::PlanPoint& point, zm::CommOp c) {
    return point.bytes_per_step[static_cast<size_t>(c)];
  };
  const double ratio = op(q, zm::CommOp::AllGather) / op(p, zm::CommOp::AllGather);
  EXPECT_GT(ratio, 0.25);
  EXPECT_LT(ratio, 0.25 * (1.0 + 4.0 / 2048.0) + 1e-3);
  EXPECT_EQ(op(q, zm::CommOp::ReduceScatter), op(p, zm::CommOp::ReduceScatter));
  EXPECT_EQ(p.pass_seconds, 0.0);
  EXPECT_GT(q.pass_seconds, 0.0);
  EXPECT_LT(q.comm_seconds, p.comm_seconds);
  EXPECT_DOUBLE_EQ(q.step_seconds_serial, q.compute_seconds + q.pass_seconds + q.comm_seconds);
  m.memory_bandwidth = 2e12;
  EXPECT_DOUBLE_EQ(zm::plan_point(int8, 3, 16, &m).pass_seconds, q.pass_seconds / 2);
  for (int stage = 0; stage <= 2; ++stage) {
    const zm::PlanPoint a = zm::plan_point(plain, stage, 16, &m);
    const zm::PlanPoint b = zm::plan_point(int8, stage, 16, &m);
    EXPECT_EQ(a.bytes_per_step, b.bytes_per_step) << "stage " << stage;
    EXPECT_EQ(b.pass_seconds, 0.0) << "stage " << stage;
  }
}

}  // namespace
