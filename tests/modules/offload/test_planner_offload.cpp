// ZeRO-Offload in the planner: the machine file's [host] table, the copies and host update priced
// from the run's own transfers, host memory per node as a fit condition, and a machine without
// [host] refused by name (the largest model with and without offload:
// tests/modules/largest_model/).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/test_paths.hpp"
#include "core/error.hpp"
#include "core/stage_spec.hpp"
#include "modules/offload/offload_cost.hpp"
#include "plan/machine.hpp"
#include "plan/planner.hpp"
#include "plan/planner_test_util.hpp"
#include "plan/run_declarations.hpp"
#include "plan/run_extensions.hpp"

namespace {

namespace fs = std::filesystem;
using zm_test::deck_with;
using zm_test::two_link_machine;

using zm_test::machine_text;

// Writes `text` to a file of its own and returns its path.
std::string write_machine(const std::string& name, const std::string& text) {
  return zm_test::write_machine("zeromini-test-planner-offload", name, text);
}

// The message load_machine fails with ("" if it loads).
std::string load_error(const std::string& path) {
  try {
    zm::load_machine(path);
  } catch (const zm::Error& error) {
    return error.what();
  }
  return "";
}

const std::string kHost =
    "[host]\nmemory_per_node_gib = 512.0\nlink = \"PCIe Gen5 x16\"\nlink_bandwidth_gbs = 50.0\n"
    "link_latency_us = 10.0\nadamw_gparams_per_s = 2.0\n";

TEST(MachineHost, ParsesTheHostTable) {
  const zm::Machine m = zm::load_machine(write_machine("host.toml", machine_text(kHost)));
  ASSERT_TRUE(m.host.has_value());
  EXPECT_DOUBLE_EQ(m.host->memory_per_node_bytes, 512.0 * (1 << 30));
  EXPECT_EQ(m.host->link, "PCIe Gen5 x16");
  EXPECT_DOUBLE_EQ(m.host->link_bandwidth, 50e9);
  EXPECT_DOUBLE_EQ(m.host->link_latency, 10e-6);
  EXPECT_DOUBLE_EQ(m.host->adamw_params_per_second, 2e9);
  // Without [host] the machine loads, with no host side.
  EXPECT_FALSE(zm::load_machine(write_machine("no-host.toml", machine_text(""))).host);
  // The latency may be left out: no latency is charged.
  std::string no_latency = kHost;
  no_latency.erase(no_latency.find("link_latency_us"),
                   std::string("link_latency_us = 10.0\n").size());
  const zm::Machine without =
      zm::load_machine(write_machine("no-latency.toml", machine_text(no_latency)));
  ASSERT_TRUE(without.host.has_value());
  EXPECT_DOUBLE_EQ(without.host->link_latency, 0.0);
}

// Errors name the file, the line (and column) and the key, and say what was expected.
TEST(MachineHost, ErrorsNameFileLineAndKey) {
  // A key missing from [host]: named at the table's line (line 14 of the file).
  std::string missing = kHost;
  missing.erase(missing.find("adamw_gparams_per_s"));
  const std::string path = write_machine("missing.toml", machine_text(missing));
  const std::string error = load_error(path);
  EXPECT_NE(error.find(path + ":14:"), std::string::npos) << error;
  EXPECT_NE(error.find("'host.adamw_gparams_per_s'"), std::string::npos) << error;
  EXPECT_NE(error.find("1e9 parameters/s"), std::string::npos) << error;
  // A value that is not a positive number: its line and key.
  std::string negative = kHost;
  negative.replace(negative.find("50.0"), 4, "-5.0");
  const std::string bad = write_machine("negative.toml", machine_text(negative));
  const std::string bad_error = load_error(bad);
  EXPECT_NE(bad_error.find(bad + ":17:"), std::string::npos) << bad_error;
  EXPECT_NE(bad_error.find("host.link_bandwidth_gbs must be a positive number"), std::string::npos)
      << bad_error;
  // A key the table does not know, and a link that is not a string.
  const std::string unknown =
      write_machine("unknown.toml", machine_text(kHost + "pcie_lanes = 16.0\n"));
  EXPECT_NE(load_error(unknown).find(unknown + ":20:"), std::string::npos);
  EXPECT_NE(load_error(unknown).find("unknown key 'host.pcie_lanes'"), std::string::npos);
  std::string numeric_link = kHost;
  numeric_link.replace(numeric_link.find("\"PCIe Gen5 x16\""), 15, "5");
  const std::string link = write_machine("link.toml", machine_text(numeric_link));
  EXPECT_NE(load_error(link).find(link + ":16:"), std::string::npos) << load_error(link);
  EXPECT_NE(load_error(link).find("host.link must be a string"), std::string::npos);
}

TEST(MachineHost, Gh200FileLoads) {
  const std::string path = zm_test::inputs_dir() + "/machines/gh200.toml";
  if (!fs::exists(path)) GTEST_SKIP() << "no machine file";
  const zm::Machine m = zm::load_machine(path);
  EXPECT_EQ(m.devices_per_node, 4);
  EXPECT_DOUBLE_EQ(m.device_memory_bytes, 96.0 * (1 << 30));
  ASSERT_TRUE(m.host.has_value());
  EXPECT_EQ(m.host->link, "NVLink-C2C");
  EXPECT_DOUBLE_EQ(m.host->link_bandwidth, 450e9);
  EXPECT_GT(m.host->adamw_params_per_second, 0.0);
}

// The machine of the offload tests: 4 devices per node, [host] with a latency per copy.
zm::Machine offload_machine() {
  zm::Machine m = two_link_machine(4, 100e9, 10e9);
  zm::HostSide host;
  host.memory_per_node_bytes = 64.0 * (1 << 30);
  host.link = "test link";
  host.link_bandwidth = 20e9;
  host.link_latency = 5e-6;
  host.adamw_params_per_second = 1e9;
  m.host = host;
  return m;
}

zm::Deck offload_deck(const char* params = "none") {
  zm::Deck deck = deck_with(4, 256, 4, "bf16");
  deck.set_value("zero.offload_optimizer", std::string("host"));
  deck.set_value("zero.offload_params", std::string(params));
  return deck;
}

// transfer_seconds is the run's own copies (run_transfers) at the link: bytes / bandwidth plus
// the latency per copy; the host update is the rank's adam_m elements at its share of the host
// rate; both enter the step times.
TEST(PlannerOffload, PricesTheRunsTransfers) {
  const zm::Machine m = offload_machine();
  for (const char* params : {"none", "host"})
    for (int stage : {1, 2, 3}) {
      if (std::string(params) == "host" && stage != 3) continue;
      SCOPED_TRACE(fmt::format("stage {} offload_params {}", stage, params));
      const zm::Deck deck = offload_deck(params);
      const zm::PlanPoint p = zm::plan_point(deck, stage, 8, &m);
      ASSERT_EQ(p.figures.at("offloads"), 1.0);
      const zm::OffloadCost o = zm::price_offload(deck, stage, p.mesh, m);
      EXPECT_EQ(p.figures.at("offload_s"), o.step_seconds());
      const zm::PlannedTransfers t = zm::run_transfers(deck, stage, p.mesh);
      ASSERT_GT(t.bytes[0], 0.0);
      ASSERT_GT(t.bytes[1], 0.0);
      EXPECT_EQ(o.transfers.bytes, t.bytes);
      EXPECT_EQ(o.transfers.calls, t.calls);
      EXPECT_DOUBLE_EQ(o.transfer_seconds,
                       (t.bytes[0] + t.bytes[1]) / 20e9 + 5e-6 * double(t.calls[0] + t.calls[1]));
      // The host update: the rank's optimizer elements (adam_m) at the host's rate, the node's
      // devices all updating (8 ranks, 4 per node: the per-device rate).
      int64_t adam_m = 0;
      const zm::RunExtensions extensions = zm::run_extensions(deck, stage);
      for (const zm::BufferSpec& b :
           zm::run_buffers(deck, stage, p.mesh, zm::attention_kernels(extensions)))
        if (b.name == std::string("adam_m")) {
          EXPECT_EQ(b.category, zm::MemCategory::Host);
          adam_m = b.count;
        }
      EXPECT_EQ(o.host_elements, adam_m);
      EXPECT_DOUBLE_EQ(o.host_update_seconds, double(adam_m) / 1e9);
      // The offloaded optimizer at least the host update or the copies to the host, at most
      // everything one after another; with the parameters offloaded, the staging on top.
      EXPECT_GE(o.optimizer_seconds, o.host_update_seconds);
      EXPECT_LE(o.step_seconds(), o.transfer_seconds + o.host_update_seconds + 1e-12);
      EXPECT_EQ(o.staging_seconds > 0, std::string(params) == "host");
      // All of it added to the serial step; to the overlapped one what backward does not hide:
      // the gradient shard's copies at stages 2-3 (one micro-step, no fp32 sum) run beside it.
      EXPECT_DOUBLE_EQ(p.step_seconds_serial,
                       p.compute_seconds + p.pass_seconds + p.comm_seconds + o.step_seconds());
      const double backward = 4.0 / 6.0 * p.compute_seconds;
      EXPECT_EQ(o.streaming_overlaps, stage >= 2 && o.streaming_seconds > 0);
      EXPECT_EQ(o.streaming_seconds > 0, stage >= 2);
      const double hidden = o.streaming_overlaps ? std::min(o.streaming_seconds, backward) : 0.0;
      EXPECT_DOUBLE_EQ(
          p.step_seconds_overlapped,
          std::max(p.compute_seconds + p.pass_seconds, p.comm_seconds) + o.step_seconds() - hidden);
    }
  // Stage 0 offloads nothing.
  const zm::PlanPoint s0 = zm::plan_point(offload_deck(), 0, 8, &m);
  EXPECT_EQ(s0.figures.at("offloads"), 0.0);
  EXPECT_EQ(s0.added_serial_seconds, 0.0);
  EXPECT_EQ(s0.memory.host(), 0.0);
}

// Fewer ranks on a node than devices share the node's host rate among themselves.
TEST(PlannerOffload, FewerRanksShareTheNodesHostRate) {
  const zm::Machine m = offload_machine();
  auto host_rate = [&](int64_t ranks) {
    const zm::PlanPoint p = zm::plan_point(offload_deck(), 2, ranks, &m);
    return zm::price_offload(offload_deck(), 2, p.mesh, m).host_rate;
  };
  EXPECT_DOUBLE_EQ(host_rate(1), 4e9);  // 4 devices per node, 1 rank
  EXPECT_DOUBLE_EQ(host_rate(2), 2e9);
  EXPECT_DOUBLE_EQ(host_rate(8), 1e9);
}

// fits = device memory per rank fits and host memory per node (x the ranks on a node) fits.
TEST(PlannerOffload, HostMemoryPerNodeMustFit) {
  zm::Machine m = offload_machine();
  const zm::Deck deck = offload_deck();
  const zm::PlanPoint p = zm::plan_point(deck, 1, 8, &m);
  EXPECT_GT(p.memory.host(), 0.0);
  EXPECT_DOUBLE_EQ(p.host_bytes_per_node, 4.0 * p.memory.host());
  EXPECT_TRUE(p.fits);
  m.host->memory_per_node_bytes = p.host_bytes_per_node * 0.99;
  const zm::PlanPoint tight = zm::plan_point(deck, 1, 8, &m);
  EXPECT_TRUE(tight.device_fits);
  EXPECT_FALSE(tight.host_fits);
  EXPECT_FALSE(tight.fits);
  // The largest model respects the host memory too: one layer more would not fit the node.
  const zm::MemoryLimits limits = zm::memory_limits(m, tight.mesh);
  EXPECT_EQ(limits.ranks_per_node, 4);
  zm::Deck d = deck;
  d.model.layers = tight.largest_layers;
  EXPECT_LE(zm::plan_memory(d, 1, tight.mesh).host() * 4, m.host->memory_per_node_bytes);
  d.model.layers = tight.largest_layers + 1;
  EXPECT_GT(zm::plan_memory(d, 1, tight.mesh).host() * 4, m.host->memory_per_node_bytes);
}

// A machine without [host] cannot price offload: plan refuses, naming the file (--largest:
// tests/modules/largest_model/).
TEST(PlannerOffload, MachineWithoutHostIsRefused) {
  const std::string path = write_machine("no-host.toml", machine_text(""));
  const zm::Machine m = zm::load_machine(path);
  std::string message;
  try {
    zm::plan_point(offload_deck(), 2, 8, &m);
  } catch (const zm::Error& error) {
    message = error.what();
  }
  EXPECT_NE(message.find(path + ": no [host] table"), std::string::npos) << message;
  EXPECT_NE(message.find("cannot be priced"), std::string::npos) << message;
  // Where offload does not apply (stage 0), or without a machine, the plan goes on.
  EXPECT_NO_THROW(zm::plan_point(offload_deck(), 0, 8, &m));
  EXPECT_NO_THROW(zm::plan_point(offload_deck(), 2, 8, nullptr));
}

}  // namespace
