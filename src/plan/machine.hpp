// A machine description for the planner (inputs/machines/*.toml): memory per device, sustained
// compute rate, and the alpha-beta parameters of the network inside and between nodes.
#pragma once

#include <cstdint>
#include <string>

namespace zm {

struct Machine {
  std::string name;
  std::string description;
  int64_t devices_per_node = 1;
  double device_memory_bytes = 0;   // per device (= per rank)
  double sustained_flops_fp32 = 0;  // FLOP/s per device
  double sustained_flops_mixed = 0;
  double memory_bandwidth = 0;      // bytes/s per device: what memory-bound passes stream at
  double intra_node_bandwidth = 0;  // bytes/s per rank, one direction
  double intra_node_latency = 0;    // seconds
  double inter_node_bandwidth = 0;
  double inter_node_latency = 0;
};

// Reads and validates a machine file; errors name the file, line, key and what was expected.
Machine load_machine(const std::string& path);

}  // namespace zm
