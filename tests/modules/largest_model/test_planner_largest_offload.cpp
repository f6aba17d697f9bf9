// plan --largest under ZeRO-Offload (the module offload's --offload axis): a machine without
// [host] refused, and offload fitting more layers on a DGX-2.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/test_paths.hpp"
#include "core/error.hpp"
#include "modules/largest_model/largest.hpp"
#include "plan/machine.hpp"
#include "plan/planner.hpp"
#include "plan/planner_test_util.hpp"

namespace {

namespace fs = std::filesystem;
using zm_test::deck_with;

using zm_test::machine_text;

// Writes `text` to a file of its own and returns its path.
std::string write_machine(const std::string& name, const std::string& text) {
  return zm_test::write_machine("zeromini-test-planner-largest-offload", name, text);
}

// --largest's offload axis, as the module registered it; its variants none, optimizer and
// optimizer + params are 0, 1 and 2.
const zm::LargestAxis* offload_axis() {
  for (const zm::LargestAxis& axis : zm::largest_axes())
    if (axis.flag == "--offload") return &axis;
  ADD_FAILURE() << "no --offload axis";
  return nullptr;
}
constexpr int kNoOffload = 0, kOptimizer = 1, kOptimizerAndParams = 2;

// A machine without [host] cannot price offload: --largest --offload refuses.
TEST(PlannerLargestOffload, MachineWithoutHostIsRefused) {
  const zm::Machine m = zm::load_machine(write_machine("no-host.toml", machine_text("")));
  EXPECT_THROW(zm::plan_largest_models(deck_with(4, 256, 4, "bf16"), m, {8}, {2}, offload_axis()),
               zm::Error);
}

// On a DGX-2 of 32 GB V100s, offloading the optimizer at stage 2 fits more layers than keeping it
// on the device (the ZeRO-Offload paper's point), and the parameters too at stage 3 more again.
TEST(PlannerLargestOffload, FitsMoreWithOffloadOnDgx2) {
  const std::string path = zm_test::inputs_dir() + "/machines/dgx2-v100-32gb.toml";
  if (!fs::exists(path)) GTEST_SKIP() << "no machine file";
  const zm::Machine m = zm::load_machine(path);
  zm::Deck deck = deck_with(50, 4096, 32, "bf16");
  const auto cells = zm::plan_largest_models(deck, m, {1, 16}, {2, 3}, offload_axis());
  auto layers = [&](int64_t devices, int stage, int offload) {
    for (const zm::LargestModel& c : cells)
      if (c.devices == devices && c.stage == stage && c.option.variant == offload &&
          c.option.sharding == zm::LargestSharding::All && !c.option.recompute)
        return c.layers;
    ADD_FAILURE() << "no cell";
    return int64_t(-1);
  };
  for (int64_t devices : {1, 16}) {
    SCOPED_TRACE(fmt::format("{} devices", devices));
    EXPECT_GT(layers(devices, 2, kOptimizer), layers(devices, 2, kNoOffload));
    EXPECT_GT(layers(devices, 3, kOptimizerAndParams), layers(devices, 3, kOptimizer));
  }
  for (const zm::LargestModel& c : cells) {
    // hpZ and the offload of the parameters are stage 3 options, and exclude each other; the
    // cells that offload keep host bytes.
    const bool params = c.option.variant == kOptimizerAndParams;
    const bool hpz = c.option.sharding == zm::LargestSharding::Hpz;
    EXPECT_EQ(c.applies, c.stage == 3 ? !(params && hpz) : !(params || hpz));
    if (!c.applies || c.layers == 0) continue;
    EXPECT_EQ(c.point.host_bytes_per_node > 0, c.option.variant != kNoOffload);
    EXPECT_LE(c.point.memory.total(), m.device_memory_bytes);
    EXPECT_LE(c.point.host_bytes_per_node, m.host->memory_per_node_bytes);
  }
}

}  // namespace
