// A machine description for the planner (inputs/machines/*.toml): memory per device, sustained
// compute rate, the alpha-beta parameters of the network inside and between nodes, and the
// device's published dense peak per precision (optional: MFU's denominator, for plan and run).
#pragma once

#include <cstdint>
#include <string>

#include "core/precision.hpp"

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
  // Dense peak FLOP/s per device for each precision; 0 where the file gives none.
  double peak_flops_fp32 = 0;
  double peak_flops_tf32 = 0;
  double peak_flops_mixed = 0;  // the 16-bit tensor-core peak (train.precision = "bf16")

  // The peak for a run in `precision` (0: none given), and its key in the file.
  double peak_flops(Precision precision) const;
  static const char* peak_key(Precision precision);
};

// Reads and validates a machine file; errors name the file, line, key and what was expected.
Machine load_machine(const std::string& path);

}  // namespace zm
