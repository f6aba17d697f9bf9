// Helpers of the planner tests (test_planner.cpp, test_planner_largest.cpp).
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>

#include "core/deck.hpp"
#include "plan/machine.hpp"
#include "plan/planner.hpp"

namespace zm_test {

// The bytes a rank sends per step, all collectives together.
inline double bytes_per_step_total(const zm::PlanPoint& p) {
  return std::accumulate(p.bytes_per_step.begin(), p.bytes_per_step.end(), 0.0);
}

// A GPT-2-vocabulary deck in a precision (build checks skipped: any build plans bf16).
inline zm::Deck deck_with(int64_t layers, int64_t dim, int64_t heads, const char* precision) {
  return zm::parse_deck(
      fmt::format("[model]\nlayers = {}\ndim = {}\nheads = {}\nvocab = 50257\n"
                  "seq_len = 1024\n[train]\nmicro_batch = 1\nprecision = \"{}\"\n",
                  layers, dim, heads, precision),
      "planner-test", {}, zm::BuildChecks::Skip);
}

// A machine with `per_node` devices per node and the given links, no latency: the step's
// communication time is then bytes over bandwidth, link by link. 16 GiB of device memory by
// default: small, for shallow answers and quick searches.
inline zm::Machine two_link_machine(int64_t per_node, double intra_bandwidth,
                                    double inter_bandwidth,
                                    double device_memory = 16.0 * (1 << 30)) {
  zm::Machine m;
  m.name = "two-link";
  m.devices_per_node = per_node;
  m.device_memory_bytes = device_memory;
  m.sustained_flops_fp32 = 1e13;
  m.sustained_flops_mixed = 1e14;
  m.intra_node_bandwidth = intra_bandwidth;
  m.inter_node_bandwidth = inter_bandwidth;
  return m;
}

// The [machine], [compute] and [network] tables every machine file needs, then `extra`.
inline std::string machine_text(const std::string& extra) {
  return "[machine]\nname = \"t\"\ndevices_per_node = 4\ndevice_memory_gib = 16.0\n"
         "[compute]\nsustained_tflops_fp32 = 10.0\nsustained_tflops_mixed = 100.0\n"
         "memory_bandwidth_gbs = 1000.0\n"
         "[network]\nintra_node_bandwidth_gbs = 100.0\nintra_node_latency_us = 1.0\n"
         "inter_node_bandwidth_gbs = 10.0\ninter_node_latency_us = 5.0\n" +
         extra;
}

// Writes `text` to the file `name` in the temporary folder `folder` and returns its path.
inline std::string write_machine(const std::string& folder, const std::string& name,
                                 const std::string& text) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / folder;
  std::filesystem::create_directories(dir);
  const std::filesystem::path path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

}  // namespace zm_test
