// The largest-model table (plan --largest, the module largest_model).
#include <gtest/gtest.h>

#include <filesystem>

#include "common/test_paths.hpp"
#include "core/deck.hpp"
#include "core/deck_keys.hpp"
#include "modules/largest_model/largest.hpp"
#include "plan/machine.hpp"
#include "plan/planner.hpp"
#include "plan/planner_test_util.hpp"

namespace {

using zm_test::deck_with;
using zm_test::two_link_machine;

const char* sharding_name(zm::LargestSharding sharding) {
  return sharding == zm::LargestSharding::All    ? "all"
         : sharding == zm::LargestSharding::Node ? "node"
                                                 : "hpz";
}

// The largest-model table (plan --largest): every answer is the deepest that fits, under the
// option's own shard groups and recomputation, and its plan is the plan at that depth.
TEST(PlannerLargest, AnswersAreTheDeepestThatFit) {
  const std::string machines = zm_test::inputs_dir() + "/machines";
  if (!std::filesystem::exists(machines + "/dgx-h100.toml")) GTEST_SKIP() << "no machine file";
  const zm::Machine m = zm::load_machine(machines + "/dgx-h100.toml");
  zm::Deck deck = deck_with(12, 768, 12, "bf16");
  deck.train.micro_batch = 8;
  const auto cells = zm::plan_largest_models(deck, m, {1, 4, 16}, {0, 1, 2, 3});
  ASSERT_EQ(cells.size(), 3u * 4u * std::size(zm::kLargestOptions));
  for (const zm::LargestModel& c : cells) {
    SCOPED_TRACE(fmt::format("devices {} stage {} shard {} recompute {}", c.devices, c.stage,
                             sharding_name(c.option.sharding), c.option.recompute));
    const bool hpz = c.option.sharding == zm::LargestSharding::Hpz;
    // hpZ where its module (zeropp) is built.
    ASSERT_EQ(c.applies,
              !hpz || (c.stage == 3 &&
                       !zm::module_setting(deck, "zero.secondary_shard_size", "").empty()));
    if (!c.applies) continue;
    ASSERT_TRUE(c.possible);
    ASSERT_GT(c.layers, 0);
    zm::Deck d = zm::with_option(deck, c.option, nullptr);
    auto total_at = [&](int64_t layers) {
      d.model.layers = layers;
      return zm::plan_memory(d, c.stage, c.mesh).total();
    };
    EXPECT_LE(total_at(c.layers), m.device_memory_bytes);
    EXPECT_GT(total_at(c.layers + 1), m.device_memory_bytes);
    EXPECT_DOUBLE_EQ(c.point.memory.total(), total_at(c.layers));
    EXPECT_EQ(c.point.mesh.group_ranks(), c.mesh.group_ranks());
    const bool in_node = c.option.sharding != zm::LargestSharding::All && c.stage > 0;
    EXPECT_EQ(c.mesh.group_ranks(), in_node ? std::min<int64_t>(8, c.devices) : c.devices);
    EXPECT_EQ(c.mesh.sub_sharded(), hpz && c.devices > 8);
    EXPECT_GT(c.point.params, 0);
    EXPECT_GT(c.point.step_seconds_overlapped, 0);
  }
}

// What the options must do to the answer: recomputation never makes the deepest model shallower;
// node groups never hold more than sharding over every device, and up to a node they are the
// same; hpZ, whose optimizer state is sharded over every device, lies between the two.
TEST(PlannerLargest, OptionsOrderTheAnswers) {
  const zm::Machine m = two_link_machine(8, 450e9, 50e9);
  zm::Deck deck = deck_with(12, 768, 12, "bf16");
  deck.train.micro_batch = 4;
  const auto cells = zm::plan_largest_models(deck, m, {1, 2, 8, 32}, {0, 1, 2, 3});
  // kLargestOptions' order: {all, none}, {all, blocks}, {node, none}, {node, blocks}, {hpz, none},
  // {hpz, blocks}.
  const size_t per_row = std::size(zm::kLargestOptions);
  ASSERT_EQ(per_row, 6u);
  for (size_t i = 0; i < cells.size(); i += per_row) {
    SCOPED_TRACE(fmt::format("devices {} stage {}", cells[i].devices, cells[i].stage));
    const zm::LargestModel* row = &cells[i];
    EXPECT_GT(row[1].layers, row[0].layers);
    EXPECT_GT(row[3].layers, row[2].layers);
    EXPECT_LE(row[2].layers, row[0].layers);
    EXPECT_LE(row[3].layers, row[1].layers);
    const bool within_a_node = row[0].devices <= 8;
    if (within_a_node || row[0].stage == 0) {
      EXPECT_EQ(row[2].layers, row[0].layers);
      EXPECT_EQ(row[3].layers, row[1].layers);
    } else if (row[0].stage == 3) {
      EXPECT_LT(row[2].layers, row[0].layers);
    }
    if (row[0].stage != 3) continue;
    for (int recompute = 0; recompute < 2; ++recompute) {
      const int64_t all = row[recompute].layers, node = row[2 + recompute].layers,
                    hpz = row[4 + recompute].layers;
      if (within_a_node) {
        EXPECT_EQ(hpz, all);
      } else {
        EXPECT_GT(hpz, node);
        EXPECT_LT(hpz, all);
      }
    }
  }
}

// A memory nothing fits in answers 0 layers; a node whose devices do not divide the count is no
// answer at all (that run cannot be launched), except at stage 0, which has one group; hpZ has no
// answer below stage 3.
TEST(PlannerLargest, NothingFitsAndImpossibleLayouts) {
  zm::Machine m = two_link_machine(6, 450e9, 50e9);
  const zm::Deck deck = deck_with(2, 256, 4, "fp32");
  for (const zm::LargestModel& c : zm::plan_largest_models(deck, m, {8}, {0, 3})) {
    const bool hpz = c.option.sharding == zm::LargestSharding::Hpz;
    EXPECT_EQ(c.applies, !hpz || c.stage == 3);
    if (!c.applies) continue;
    const bool in_node = c.option.sharding != zm::LargestSharding::All;
    EXPECT_EQ(c.possible, !in_node || c.stage == 0);
    if (c.possible) {
      EXPECT_GT(c.layers, 0);
    }
  }
  m.device_memory_bytes = 1e6;
  for (const zm::LargestModel& c : zm::plan_largest_models(deck, m, {1, 4}, {0, 3})) {
    if (c.applies) {
      EXPECT_EQ(c.layers, 0);
    }
  }
}

}  // namespace
