// ZeRO++'s strategies in the step schedule (src/modules/zeropp/strategies.hpp): the schedule's
// builder offers them the core's entries, and they take those the settings ask for: qwZ the
// unit gathers (and with secondary shards under mixed precision the gathers across the replicas),
// qgZ both levels of the gradient reduction, in two hops where the group spans nodes evenly.
#include <gtest/gtest.h>

#include <string>

#include "core/deck.hpp"
#include "core/stage_spec.hpp"
#include "core/zero_mesh.hpp"
#include "model/layout.hpp"
#include "modules/zeropp/cross_node.hpp"
#include "plan/planner_test_util.hpp"
#include "plan/run_options.hpp"
#include "zero/schedule.hpp"

namespace {

using zm::MeshGroup;
using zm::ScheduleRole;

struct Model {
  zm::Deck deck;
  zm::ZeroMesh mesh;
  zm::ParamLayout layout;
  zm::Partition partition;
  Model(zm::Deck d, zm::ZeroMesh m)
      : deck(std::move(d)),
        mesh(std::move(m)),
        layout(deck.model),
        partition(layout, mesh.group_ranks(), mesh.sub_shards()) {}
  // A copy: the schedule it comes from is a temporary.
  zm::ScheduledCollective of(int stage, int unit, ScheduleRole role) const {
    return zm::build_step_schedule(zm::stage_spec(stage), partition,
                                   zm::zero_options(deck, stage, mesh), mesh)
        .of(unit, role);
  }
};

zm::Deck small_deck(const char* precision, const std::string& key, const std::string& value) {
  zm::Deck deck = zm_test::deck_with(2, 64, 2, precision);
  deck.model.vocab = 256;
  deck.model.seq_len = 32;
  deck.set_value("zero.quantize_block", int64_t{64});
  deck.set_value(key, value);
  return deck;
}

std::string strategy(const zm::ScheduledCollective& c) {
  return c.strategy->name(c);
}

TEST(ZeroppSchedule, QuantizedWeightsTakeTheGathers) {
  const Model hpz_qwz(small_deck("bf16", "zero.quantize_weights", "int8"),
                      zm::hybrid_mesh(4, 2, true));
  EXPECT_EQ(strategy(hpz_qwz.of(3, 1, ScheduleRole::UpdateGather)), "int8_all_gather");
  EXPECT_EQ(strategy(hpz_qwz.of(3, 1, ScheduleRole::UnitGather)), "int8_all_gather");
  // The fp32 masters' own sub-shard: unquantized.
  const Model hpz_qwz_fp32(small_deck("fp32", "zero.quantize_weights", "int8"),
                           zm::hybrid_mesh(4, 2, true));
  EXPECT_EQ(strategy(hpz_qwz_fp32.of(3, 1, ScheduleRole::UpdateGather)), "all_gather");
}

TEST(ZeroppSchedule, QuantizedGradientsTakeBothLevels) {
  const zm::Deck qgz = small_deck("fp32", "zero.quantize_grads", "int8");
  const Model flat(qgz, zm::hybrid_mesh(4, 2, false));
  EXPECT_EQ(strategy(flat.of(1, 0, ScheduleRole::GroupReduction)), "quantized_all_to_all");
  EXPECT_TRUE(flat.of(1, 0, ScheduleRole::GroupReduction).blocking());
  EXPECT_EQ(strategy(flat.of(2, 0, ScheduleRole::ReplicaReduction)), "quantized_exchange");
  zm::ZeroMesh two_nodes = zm::hybrid_mesh(4, 4, false);
  two_nodes.ranks_per_node = 2;
  const Model hops(qgz, two_nodes);
  const zm::ScheduledCollective by_node = hops.of(3, 0, ScheduleRole::GroupReduction);
  EXPECT_EQ(strategy(by_node), "quantized_all_to_all_by_node");
  ASSERT_EQ(by_node.hops.size(), 2u);
  EXPECT_EQ(by_node.hops[0].group, MeshGroup::Added);
  EXPECT_EQ(by_node.hops[0].added, zm::kShardWithinNode);
  EXPECT_EQ(by_node.hops[1].group, MeshGroup::Added);
  EXPECT_EQ(by_node.hops[1].added, zm::kShardAcrossNodes);
}

}  // namespace
