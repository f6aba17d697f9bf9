// ZeRO-Infinity in the planner: the machine file's [nvme] table, the swap files' reads and writes
// priced at the ranks' share of the node's drives, the state they hold as the storage that must fit
// the node's capacity, and a machine without [nvme] refused by name.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "core/deck.hpp"
#include "core/error.hpp"
#include "modules/zero_infinity/with_offload/nvme_plan.hpp"
#include "plan/machine.hpp"
#include "plan/planner.hpp"
#include "plan/planner_test_util.hpp"

namespace {

constexpr double kRead = 20e9, kWrite = 10e9;  // the test machine's drives, bytes/s per node

// A GPT-2-vocabulary deck with the optimizer state `where` ("host" or "nvme").
zm::Deck deck_on(const char* where) {
  return zm::parse_deck(
      fmt::format("[model]\nlayers = 4\ndim = 512\nheads = 8\nvocab = 50257\nseq_len = 1024\n"
                  "[train]\nmicro_batch = 1\n[zero]\noffload_optimizer = \"{}\"\n",
                  where),
      "planner-nvme-test", {}, zm::BuildChecks::Skip);
}

// 4 devices per node, a host side, and [nvme] of `capacity` bytes per node (none: no table).
zm::Machine machine_with(double capacity) {
  zm::Machine m = zm_test::two_link_machine(4, 100e9, 10e9);
  zm::HostSide host;
  host.memory_per_node_bytes = 512.0 * (1 << 30);
  host.link = "test link";
  host.link_bandwidth = 20e9;
  host.adamw_params_per_second = 1e9;
  m.host = host;
  if (capacity > 0) {
    m.numbers["nvme.capacity_per_node_tb"] = capacity / 1e12;
    m.numbers["nvme.read_bandwidth_gbs"] = kRead / 1e9;
    m.numbers["nvme.write_bandwidth_gbs"] = kWrite / 1e9;
  }
  return m;
}

double figure(const zm::PlanPoint& p, const char* name) {
  const auto found = p.figures.find(name);
  return found == p.figures.end() ? 0.0 : found->second;
}

TEST(MachineNvme, ReadsTheTableAndNamesAMissingKey) {
  const std::string table =
      "[nvme]\ndrives = \"8x 3.84 TB\"\ncapacity_per_node_tb = 30.72\nread_bandwidth_gbs = 27.2\n"
      "write_bandwidth_gbs = 15.2\n";
  const zm::Machine m = zm::load_machine(zm_test::write_machine(
      "zeromini-test-planner-nvme", "nvme.toml", zm_test::machine_text(table)));
  EXPECT_DOUBLE_EQ(m.number("nvme.capacity_per_node_tb", 1e12), 30.72e12);
  EXPECT_DOUBLE_EQ(m.number("nvme.read_bandwidth_gbs", 1e9), 27.2e9);
  EXPECT_EQ(m.strings.at("nvme.drives"), "8x 3.84 TB");
  std::string missing = table;
  missing.erase(missing.find("write_bandwidth_gbs"));
  const std::string path = zm_test::write_machine("zeromini-test-planner-nvme", "missing.toml",
                                                  zm_test::machine_text(missing));
  try {
    zm::load_machine(path);
    ADD_FAILURE() << "a [nvme] table without write_bandwidth_gbs loaded";
  } catch (const zm::Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find(path + ":14:"), std::string::npos) << message;  // the table's line
    EXPECT_NE(message.find("'nvme.write_bandwidth_gbs'"), std::string::npos) << message;
  }
}

// Each step reads every rank's file and writes it back, at a quarter of the node's bandwidth each
// (4 ranks to a node): the serial step is that much longer than with the state in host memory;
// the overlapped one waits for at least unit 0's read and at most all of it. Device memory is the
// same; the state moves from host memory into storage, and host memory holds the store's staging.
TEST(PlannerNvme, PricesEachStepsReadsAndWritesOfTheSwapFiles) {
  const zm::Machine machine = machine_with(30e12);
  for (const int stage : {1, 2, 3}) {
    SCOPED_TRACE(fmt::format("stage {}", stage));
    const zm::PlanPoint host = zm::plan_point(deck_on("host"), stage, 8, &machine);
    const zm::PlanPoint nvme = zm::plan_point(deck_on("nvme"), stage, 8, &machine);
    const zm::NvmeVolume volume = zm::planned_nvme(deck_on("nvme"), stage, nvme.mesh);
    ASSERT_GT(volume.file_bytes, 0);
    EXPECT_EQ(volume.read_bytes, volume.file_bytes);
    EXPECT_EQ(volume.write_bytes, volume.file_bytes);
    EXPECT_DOUBLE_EQ(figure(nvme, "nvme_read_bytes"), static_cast<double>(volume.read_bytes));
    EXPECT_DOUBLE_EQ(figure(nvme, "nvme_bytes_per_node"), 4.0 * volume.file_bytes);
    const double seconds = volume.read_bytes / (kRead / 4) + volume.write_bytes / (kWrite / 4);
    EXPECT_NEAR(figure(nvme, "nvme_s"), seconds, 1e-12 * seconds);
    EXPECT_NEAR(nvme.step_seconds_serial - host.step_seconds_serial, seconds, 1e-9 * seconds);
    const double waited = nvme.step_seconds_overlapped - host.step_seconds_overlapped;
    EXPECT_GE(waited, volume.first_unit_bytes / (kRead / 4) * (1 - 1e-9));
    EXPECT_LE(waited, seconds * (1 + 1e-9));
    EXPECT_EQ(nvme.memory.total(), host.memory.total());
    EXPECT_GT(nvme.memory.storage(), 0.0);
    EXPECT_LE(nvme.memory.storage(), static_cast<double>(volume.file_bytes));
    EXPECT_EQ(host.memory.storage(), 0.0);
    // In host memory, the store's staging slots in place of the state.
    EXPECT_EQ(nvme.memory.host(), host.memory.host() - nvme.memory.storage() +
                                      static_cast<double>(volume.staging_bytes));
  }
}

// The state of a node's ranks must fit its NVMe capacity: "storage" in the fits column where not.
TEST(PlannerNvme, StorageIsAFitCondition) {
  const zm::Machine ample = machine_with(30e12);
  const zm::PlanPoint fits = zm::plan_point(deck_on("nvme"), 2, 8, &ample);
  EXPECT_TRUE(fits.fits);
  const double per_node = fits.memory.storage() * 4;
  const zm::Machine small = machine_with(per_node / 2);
  const zm::PlanPoint short_of = zm::plan_point(deck_on("nvme"), 2, 8, &small);
  EXPECT_TRUE(short_of.device_fits);
  EXPECT_TRUE(short_of.host_fits);
  EXPECT_FALSE(short_of.storage_fits);
  EXPECT_FALSE(short_of.fits);
  // Exactly the capacity fits.
  const zm::Machine exact = machine_with(per_node);
  EXPECT_TRUE(zm::plan_point(deck_on("nvme"), 2, 8, &exact).storage_fits);
}

TEST(PlannerNvme, AMachineWithoutTheTableIsRefusedByName) {
  const zm::Machine none = machine_with(0);
  try {
    zm::plan_point(deck_on("nvme"), 2, 8, &none);
    ADD_FAILURE() << "priced without [nvme]";
  } catch (const zm::Error& error) {
    EXPECT_NE(std::string(error.what()).find("two-link: no [nvme] table"), std::string::npos)
        << error.what();
  }
  // Without a machine, the bytes alone.
  const zm::PlanPoint bytes = zm::plan_point(deck_on("nvme"), 2, 8, nullptr);
  EXPECT_GT(figure(bytes, "nvme_read_bytes"), 0.0);
}

}  // namespace
