// The planner's predicted MFU (src/modules/mfu/): model FLOPs per device over the step time,
// against the machine file's peak for the precision; none without a peak.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "common/test_paths.hpp"
#include "modules/mfu/peak.hpp"
#include "plan/planner.hpp"
#include "plan/planner_test_util.hpp"

namespace {

using zm_test::deck_with;
using zm_test::two_link_machine;

// Predicted MFU: the predicted throughput (model FLOPs per device over the step time, checked by
// tests/plan/test_planner.cpp) against the machine file's peak for the precision.
TEST(Planner, PredictsMfuAgainstTheMachinePeak) {
  const std::string machines = zm_test::inputs_dir() + "/machines";
  if (!std::filesystem::exists(machines + "/dgx-h100.toml")) GTEST_SKIP() << "no machine file";
  const zm::Machine m = zm::load_machine(machines + "/dgx-h100.toml");
  EXPECT_DOUBLE_EQ(zm::machine_peak_flops(m, zm::Precision::BF16), 989.4e12);
  EXPECT_DOUBLE_EQ(zm::machine_peak_flops(m, zm::Precision::TF32), 494.7e12);
  EXPECT_DOUBLE_EQ(zm::machine_peak_flops(m, zm::Precision::FP32), 66.9e12);
  zm::Deck deck = deck_with(12, 768, 12, "bf16");
  deck.model.recompute = "blocks";
  const zm::PlanPoint p = zm::plan_point(deck, 3, 8, &m);
  EXPECT_DOUBLE_EQ(zm::predicted_mfu(p, p.step_seconds_overlapped),
                   p.predicted_flops_per_second() / 989.4e12);
  EXPECT_LE(zm::predicted_mfu(p, p.step_seconds_serial),
            zm::predicted_mfu(p, p.step_seconds_overlapped));
  // Below sustained / peak = 0.5 by the recomputation and the communication.
  EXPECT_LT(zm::predicted_mfu(p, p.step_seconds_overlapped), 0.5);
  EXPECT_GT(zm::predicted_mfu(p, p.step_seconds_overlapped), 0.0);
}

// Without a peak for the precision MFU is not available, never a guess.
TEST(Planner, NoPeakNoMfu) {
  const zm::Machine m = two_link_machine(8, 450e9, 50e9);  // sets no peak
  const zm::PlanPoint p = zm::plan_point(deck_with(4, 256, 4, "fp32"), 2, 8, &m);
  EXPECT_GT(p.predicted_flops_per_second(), 0.0);
  EXPECT_TRUE(std::isnan(zm::predicted_mfu(p, p.step_seconds_overlapped)));
  EXPECT_TRUE(std::isnan(zm::predicted_mfu(p, p.step_seconds_serial)));
  const std::string machines = zm_test::inputs_dir() + "/machines";
  if (!std::filesystem::exists(machines + "/dgx2-v100-32gb.toml")) return;
  EXPECT_EQ(zm::machine_peak_flops(zm::load_machine(machines + "/dgx2-v100-32gb.toml"),
                                   zm::Precision::TF32),
            0.0);  // a V100 has no TF32
}

}  // namespace
