// plan --largest over ZeRO-Infinity's memory tiers (the module's --tiers axis, with the modules
// offload and largest_model): a machine without [nvme] refused, and on one DGX-2 node each tier
// below the GPU fitting a deeper model than the one above it (the paper's "GPU only / CPU + GPU /
// NVMe + CPU + GPU"), every cell within the device memory, the host memory and the drives.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "common/test_paths.hpp"
#include "core/error.hpp"
#include "modules/largest_model/largest.hpp"
#include "plan/machine.hpp"
#include "plan/planner.hpp"
#include "plan/planner_test_util.hpp"

namespace {

namespace fs = std::filesystem;

const zm::LargestAxis* tiers_axis() {
  for (const zm::LargestAxis& axis : zm::largest_axes())
    if (axis.flag == "--tiers") return &axis;
  ADD_FAILURE() << "no --tiers axis";
  return nullptr;
}
constexpr int kGpu = 0, kCpu = 1, kNvme = 2;

TEST(PlannerLargestTiers, MachineWithoutNvmeIsRefused) {
  const std::string host =
      "[host]\nmemory_per_node_gib = 1024\nlink = \"PCIe\"\nlink_bandwidth_gbs = 12\n"
      "adamw_gparams_per_s = 1\n";
  const zm::Machine m = zm::load_machine(zm_test::write_machine(
      "zeromini-test-planner-largest-tiers", "no-nvme.toml", zm_test::machine_text(host)));
  EXPECT_THROW(
      zm::plan_largest_models(zm_test::deck_with(4, 256, 4, "bf16"), m, {4}, {3}, tiers_axis()),
      zm::Error);
}

// One node of 16 V100s, width 8192 with recomputation: GPU only is bound by the device's memory,
// CPU + GPU by the host's, NVMe + CPU + GPU goes deeper still.
TEST(PlannerLargestTiers, EachTierFitsMoreOnADgx2Node) {
  const std::string path = zm_test::inputs_dir() + "/machines/dgx2-v100-32gb.toml";
  if (!fs::exists(path)) GTEST_SKIP() << "no machine file";
  const zm::Machine m = zm::load_machine(path);
  zm::Deck deck = zm_test::deck_with(8, 8192, 64, "bf16");
  deck.set_value("model.recompute", std::string("blocks"));
  const auto cells = zm::plan_largest_models(deck, m, {16}, {3}, tiers_axis());
  auto layers = [&](int tier) {
    for (const zm::LargestModel& c : cells)
      if (c.option.variant == tier && c.option.sharding == zm::LargestSharding::All &&
          c.option.recompute)
        return c.layers;
    ADD_FAILURE() << "no cell";
    return int64_t(-1);
  };
  EXPECT_GT(layers(kCpu), layers(kGpu));
  EXPECT_GT(layers(kNvme), 2 * layers(kCpu));
  for (const zm::LargestModel& c : cells) {
    SCOPED_TRACE(fmt::format("tier {}, recompute {}", c.option.variant, c.option.recompute));
    if (!c.applies || c.layers == 0) continue;
    const zm::PlanPoint& p = c.point;
    EXPECT_LE(p.memory.total(), m.device_memory_bytes);
    EXPECT_LE(p.host_bytes_per_node, m.host->memory_per_node_bytes);
    EXPECT_LE(p.memory.storage() * 16, zm::storage_capacity_per_node(m));
    EXPECT_EQ(p.memory.storage() > 0, c.option.variant == kNvme);
    EXPECT_EQ(p.host_bytes_per_node > 0, c.option.variant != kGpu);
  }
}

}  // namespace
