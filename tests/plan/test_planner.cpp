#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "common/test_paths.hpp"
#include "core/deck.hpp"
#include "core/error.hpp"
#include "plan/machine.hpp"
#include "plan/planner.hpp"
#include "plan/run_declarations.hpp"
#include "plan/run_extensions.hpp"
#include "planner_test_util.hpp"

namespace {

using zm_test::deck_with;
using zm_test::two_link_machine;

// The paper's closed forms (mixed precision, K = 12): stage 0 16 Psi, P_os 4 Psi + 12 Psi / N,
// P_os+g 2 Psi + 14 Psi / N, P_os+g+p 16 Psi / N, with Psi' the padded count.
TEST(Planner, MixedPrecisionModelStatesFollowThePaper) {
  const zm::Deck deck = deck_with(4, 256, 4, "bf16");
  for (int64_t n : {1, 4, 16, 64, 1024, 1 << 20}) {
    for (int stage = 0; stage <= 3; ++stage) {
      const zm::PlanPoint p = zm::plan_point(deck, stage, n, nullptr);
      const double psi = static_cast<double>(p.padded_params), N = static_cast<double>(n);
      const double expected[] = {16 * psi, 4 * psi + 12 * psi / N, 2 * psi + 14 * psi / N,
                                 16 * psi / N};
      EXPECT_DOUBLE_EQ(p.memory.model_states(), expected[stage]) << "stage " << stage << " N " << n;
    }
  }
}

TEST(Planner, TrafficIsTwoOrThreePsiPerRank) {
  const zm::Deck deck = deck_with(2, 128, 4, "fp32");
  for (int64_t n : {2, 3, 1000}) {
    for (int stage = 0; stage <= 3; ++stage) {
      const zm::PlanPoint p = zm::plan_point(deck, stage, n, nullptr);
      const double psi_bytes = 4.0 * static_cast<double>(p.padded_params);
      const double ring = (n - 1.0) / n;
      const double stats = 2 * ring * 8;
      EXPECT_NEAR(zm_test::bytes_per_step_total(p), (stage == 3 ? 3 : 2) * ring * psi_bytes + stats,
                  1e-6 * psi_bytes);
    }
  }
}

// The planner's cost must not grow with the rank count (a loop over ranks at 4 million ranks
// would take seconds): a whole point, memory and traffic, within a generous bound.
TEST(Planner, RunsInstantlyAtMillionsOfRanks) {
  const zm::Deck deck = deck_with(96, 12288, 96, "bf16");  // a GPT-3-sized model
  const auto start = std::chrono::steady_clock::now();
  const zm::PlanPoint p = zm::plan_point(deck, 3, 4'000'000, nullptr);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 0.5) << "planning one point at 4 million ranks took " << seconds << " s";
  EXPECT_GT(p.params, 170'000'000'000);
  EXPECT_LT(p.memory.model_states(), 16.0 * p.padded_params / 4'000'000 * 1.01);
}

TEST(Planner, LargestModelThatFitsIsTheDeepestThatFits) {
  const std::string machines = zm_test::inputs_dir() + "/machines";
  if (!std::filesystem::exists(machines + "/dgx-h100.toml")) GTEST_SKIP() << "no machine file";
  const zm::Machine m = zm::load_machine(machines + "/dgx-h100.toml");
  const zm::Deck deck = deck_with(12, 768, 12, "bf16");
  for (int stage = 0; stage <= 3; ++stage) {
    const zm::PlanPoint p = zm::plan_point(deck, stage, 8, &m);
    ASSERT_GT(p.largest_layers, 0);
    auto total_at = [&](int64_t layers) {
      zm::Deck d = deck;
      d.model.layers = layers;
      return zm::plan_memory(d, stage, zm::plan_zero_mesh(d, stage, 8, &m)).total();
    };
    EXPECT_LE(total_at(p.largest_layers), m.device_memory_bytes);
    EXPECT_GT(total_at(p.largest_layers + 1), m.device_memory_bytes);
    EXPECT_GT(p.step_seconds_serial, 0);
    EXPECT_GE(p.step_seconds_serial, p.step_seconds_overlapped);
  }
}

zm::Deck sharded_by_node(zm::Deck deck) {
  deck.zero.shard_size = zm::kShardSizeNode;
  return deck;
}

// Hybrid sharding within a node holds what plain ZeRO over that node holds: 16 ranks in groups of
// 8 keep the model states (and every other buffer) of 8 ranks, at every sharded stage.
TEST(PlannerHybrid, NodeShardingHoldsTheMemoryOfOneNode) {
  const zm::Machine m = two_link_machine(8, 450e9, 50e9);
  for (const char* precision : {"fp32", "bf16"}) {
    const zm::Deck plain = deck_with(4, 256, 4, precision);
    const zm::Deck hybrid = sharded_by_node(plain);
    for (int stage = 1; stage <= 3; ++stage) {
      SCOPED_TRACE(fmt::format("{} stage {}", precision, stage));
      const zm::PlanPoint h = zm::plan_point(hybrid, stage, 16, &m);
      const zm::PlanPoint p = zm::plan_point(plain, stage, 8, &m);
      ASSERT_EQ(h.mesh.group_ranks(), 8);
      ASSERT_EQ(h.mesh.groups(), 2);
      EXPECT_EQ(h.memory.model_states(), p.memory.model_states());
      EXPECT_EQ(h.memory.bytes, p.memory.bytes);
      // And less than sharding over all 16 would leave: the price of the replica.
      EXPECT_GT(h.memory.model_states(),
                zm::plan_point(plain, stage, 16, &m).memory.model_states());
    }
    // Stage 0 has one group whatever the shard size.
    EXPECT_EQ(zm::plan_point(hybrid, 0, 16, &m).mesh.groups(), 1);
  }
}

// zero.ranks_per_node names the node without a machine file, and wins over the machine's.
TEST(PlannerHybrid, RanksPerNodeFromTheDeck) {
  zm::Deck deck = sharded_by_node(deck_with(2, 128, 4, "fp32"));
  deck.zero.ranks_per_node = 4;
  const zm::Machine m = two_link_machine(8, 450e9, 50e9);
  EXPECT_EQ(zm::plan_point(deck, 3, 16, nullptr).mesh.group_ranks(), 4);
  EXPECT_EQ(zm::plan_point(deck, 3, 16, &m).mesh.group_ranks(), 4);
  deck.zero.ranks_per_node = 0;
  EXPECT_EQ(zm::plan_point(deck, 3, 16, &m).mesh.group_ranks(), 8);
  EXPECT_EQ(zm::plan_point(deck, 3, 16, nullptr).mesh.group_ranks(),
            16);  // no node known: one group
  deck.zero.shard_size = 5;
  EXPECT_THROW(zm::plan_point(deck, 3, 16, nullptr), zm::Error);
}

// Across the groups a step all-reduces each unit's shard once (over the groups) and the step
// statistics (over every rank: the loss and a sum of squares for each of the 5 datasets); within a
// group it moves what plain ZeRO over the group moves: reduce-scatter and all-gather (stage 3: two
// all-gathers) of the padded parameters.
TEST(PlannerHybrid, TrafficByLevel) {
  for (const char* precision : {"fp32", "bf16"}) {
    const zm::Deck deck = sharded_by_node(deck_with(3, 192, 4, precision));
    const double element = std::string(precision) == "bf16" ? 2.0 : 4.0;
    const zm::Machine m = two_link_machine(8, 450e9, 50e9);
    for (int64_t n : {16, 64}) {
      for (int stage = 1; stage <= 3; ++stage) {
        SCOPED_TRACE(fmt::format("{} stage {} ranks {}", precision, stage, n));
        const zm::PlanPoint p = zm::plan_point(deck, stage, n, &m);
        const double g = 8, groups = static_cast<double>(n) / g, N = static_cast<double>(n);
        const double psi_bytes = element * static_cast<double>(p.padded_params);
        const double inter = 2 * (groups - 1) / groups * psi_bytes / g + 2 * (N - 1) / N * 4 * 6;
        const double intra = (stage == 3 ? 3 : 2) * (g - 1) / g * psi_bytes;
        EXPECT_NEAR(p.bytes_at_level(zm::CommLevel::InterGroup), inter, 1e-9 * psi_bytes);
        EXPECT_NEAR(p.bytes_at_level(zm::CommLevel::IntraGroup), intra, 1e-9 * psi_bytes);
        EXPECT_NEAR(zm_test::bytes_per_step_total(p), inter + intra, 1e-9 * psi_bytes);
      }
    }
  }
}

// Each collective is priced on the link its ring crosses: with node-sized groups, the group's
// collectives on the intra-node link and the replicas' (one rank per node) at the per-device
// network bandwidth. A ring across nodes with k of its ranks in each node runs as k rings, one
// per network card: k x the per-device bandwidth, at most the intra-node link's.
TEST(PlannerHybrid, CollectivesArePricedOnTheLinkTheyCross) {
  const double intra_bw = 400e9, inter_bw = 25e9, eight_cards = 8 * inter_bw;
  const zm::Machine m = two_link_machine(8, intra_bw, inter_bw);
  const zm::Machine fast_cards = two_link_machine(8, intra_bw, 100e9);
  const zm::Deck plain = deck_with(3, 192, 4, "bf16");
  const zm::Deck node = sharded_by_node(plain);
  zm::Deck spanning = plain;
  spanning.zero.shard_size = 16;
  // The step statistics' all-reduce spans the world (8 ranks in each node).
  // (The loss and a sum of squares per dataset: the embedding, 3 blocks, the final norm.)
  const double stats = zm::ring_bytes(zm::CommOp::AllReduce, (1 + 3 + 2) * 4.0, 32);
  auto expect_seconds = [](double planned, double expected) {
    EXPECT_NEAR(planned, expected, 1e-12 * expected);
  };
  for (int stage = 1; stage <= 3; ++stage) {
    SCOPED_TRACE(fmt::format("stage {}", stage));
    const zm::PlanPoint h = zm::plan_point(node, stage, 32, &m);
    const double intra = h.bytes_at_level(zm::CommLevel::IntraGroup);
    const double inter = h.bytes_at_level(zm::CommLevel::InterGroup);
    ASSERT_GT(inter, stats);
    expect_seconds(h.comm_seconds,
                   intra / intra_bw + (inter - stats) / inter_bw + stats / eight_cards);
    // Groups of 16 span two nodes, 8 ranks in each; their 2 replicas sit on different nodes.
    const zm::PlanPoint s = zm::plan_point(spanning, stage, 32, &m);
    ASSERT_EQ(s.mesh.group_ranks(), 16);
    const double s_inter = s.bytes_at_level(zm::CommLevel::InterGroup);
    expect_seconds(s.comm_seconds, s.bytes_at_level(zm::CommLevel::IntraGroup) / eight_cards +
                                       (s_inter - stats) / inter_bw + stats / eight_cards);
    const zm::PlanPoint p = zm::plan_point(plain, stage, 32, &m);
    expect_seconds(p.comm_seconds, zm_test::bytes_per_step_total(p) / eight_cards);
    // Eight cards faster than the intra-node link: the intra-node link sets the pace.
    const zm::PlanPoint fast = zm::plan_point(plain, stage, 32, &fast_cards);
    expect_seconds(fast.comm_seconds, zm_test::bytes_per_step_total(fast) / intra_bw);
    // Within one node everything is intra-node.
    const zm::PlanPoint one = zm::plan_point(node, stage, 8, &m);
    expect_seconds(one.comm_seconds, zm_test::bytes_per_step_total(one) / intra_bw);
  }
}

// Predicted throughput: model FLOPs per device over the step time; the step time prices the
// hardware FLOPs (recomputation included). (MFU against the machine's peak: tests/modules/mfu/.)
TEST(Planner, PredictsThroughputFromTheModelFlops) {
  const std::string machines = zm_test::inputs_dir() + "/machines";
  if (!std::filesystem::exists(machines + "/dgx-h100.toml")) GTEST_SKIP() << "no machine file";
  const zm::Machine m = zm::load_machine(machines + "/dgx-h100.toml");
  zm::Deck deck = deck_with(12, 768, 12, "bf16");
  deck.model.recompute = "blocks";
  const zm::PlanPoint p = zm::plan_point(deck, 3, 8, &m);
  // 8 data-parallel ranks x 1 sequence of 1024 tokens, an eighth of it per rank.
  const zm::StepFlops flops =
      zm::step_flops(deck.model, zm::attention_kernels(zm::run_extensions(deck, 3)), 8.0 * 1024, 8);
  EXPECT_DOUBLE_EQ(p.model_flops_per_step, flops.model_per_rank());
  EXPECT_DOUBLE_EQ(p.flops_per_step, flops.hardware_per_rank());
  EXPECT_GT(p.flops_per_step, p.model_flops_per_step);
  EXPECT_DOUBLE_EQ(p.compute_seconds, p.flops_per_step / m.sustained_flops_mixed);
  EXPECT_DOUBLE_EQ(p.predicted_flops_per_second(),
                   p.model_flops_per_step / p.step_seconds_overlapped);
}

TEST(Planner, EveryMachineFileLoads) {
  const std::string machines = zm_test::inputs_dir() + "/machines";
  int count = 0;
  if (std::filesystem::exists(machines))
    for (const auto& entry : std::filesystem::directory_iterator(machines))
      if (entry.path().extension() == ".toml") {
        SCOPED_TRACE(entry.path().string());
        EXPECT_NO_THROW(zm::load_machine(entry.path().string()));
        ++count;
      }
  EXPECT_GE(count, 4);
}

// A module's table (add_machine_key): optional as a whole, its values in Machine::numbers and
// strings, a required key it lacks named at the table, and listed where a table is unknown.
TEST(Planner, MachineFilesTakeTablesModulesAdd) {
  zm::add_machine_key({"scratch_tier.capacity_tb", true, false, "the tier's capacity in TB"});
  zm::add_machine_key({"scratch_tier.drives", false, true, ""});
  const std::filesystem::path dir = zm_test::fresh_dir("machine-module-table");
  std::ifstream core_file(zm_test::inputs_dir() + "/machines/dgx-h100.toml");
  const std::string core((std::istreambuf_iterator<char>(core_file)), {});
  const auto machine_with = [&](const std::string& name, const std::string& extra) {
    std::ofstream((dir / name).string()) << core << extra;
    return (dir / name).string();
  };
  const auto refusal = [](const std::string& path) -> std::string {
    try {
      zm::load_machine(path);
    } catch (const zm::Error& error) {
      return error.what();
    }
    return "";
  };
  const zm::Machine with =
      zm::load_machine(machine_with("with.toml", "\n[scratch_tier]\ncapacity_tb = 30.5\n"));
  EXPECT_DOUBLE_EQ(with.number("scratch_tier.capacity_tb"), 30.5);
  EXPECT_DOUBLE_EQ(with.number("scratch_tier.capacity_tb", 1e12), 30.5e12);
  EXPECT_EQ(with.strings.count("scratch_tier.drives"), 0u);
  const zm::Machine without = zm::load_machine(machine_with("without.toml", ""));
  EXPECT_DOUBLE_EQ(without.number("scratch_tier.capacity_tb"), 0.0);
  const std::string lacking =
      refusal(machine_with("lacking.toml", "\n[scratch_tier]\ndrives = \"8 x 3.84 TB\"\n"));
  EXPECT_NE(lacking.find("[scratch_tier] lacks key 'scratch_tier.capacity_tb' (expected the "
                         "tier's capacity in TB"),
            std::string::npos)
      << lacking;
  const std::string unknown = refusal(machine_with("unknown.toml", "\n[bogus]\nx = 1\n"));
  // The core's tables, then the modules' (this build's among them).
  EXPECT_NE(unknown.find("unknown section [bogus]; expected [machine], [compute], [network] and "
                         "(optional) [host], "),
            std::string::npos)
      << unknown;
  EXPECT_NE(unknown.find(", [scratch_tier]"), std::string::npos) << unknown;
  const std::string text =
      refusal(machine_with("text.toml", "\n[scratch_tier]\ncapacity_tb = \"lots\"\n"));
  EXPECT_NE(text.find("scratch_tier.capacity_tb must be a positive number"), std::string::npos)
      << text;
}

}  // namespace
