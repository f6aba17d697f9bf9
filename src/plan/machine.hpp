// A machine description for the planner (inputs/machines/*.toml): memory per device, compute
// rates, the alpha-beta network inside and between nodes, and optionally the published peaks and
// the host side ([host]).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace zm {

// A node's host side, for model state kept in host memory.
struct HostSide {
  double memory_per_node_bytes = 0;  // host DRAM of one node
  std::string link;                  // the link's name ("PCIe Gen5 x16", "NVLink-C2C", ...)
  double link_bandwidth = 0;         // bytes/s per device, one direction
  double link_latency = 0;           // seconds per copy (0 where the file gives none)
  // Parameters per second the host's AdamW updates for one device's rank, all updating at once.
  double adamw_params_per_second = 0;
};

struct Machine {
  std::string name;
  std::string path;  // the file it was read from; empty for a machine made in code
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
  // [host]: absent where the file has none; the planner then refuses to price host memory's copies.
  std::optional<HostSide> host;
  // Every value the file gives by "table.key", as written: what a module's tables hold.
  std::map<std::string, double> numbers;
  std::map<std::string, std::string> strings;
  // numbers' value times `scale`; 0 where the file has none.
  double number(const std::string& key, double scale = 1) const {
    const auto found = numbers.find(key);
    return found == numbers.end() ? 0.0 : found->second * scale;
  }

  // The file it came from, else its name: what a message about it names.
  std::string source() const { return path.empty() ? name : path; }
};

// A key of a machine file: a positive number or a string. An optional one may be left out: a
// peak not published (or not measured) stays absent (0), never a guess.
struct MachineKey {
  const char* name;     // "table.key"
  bool number;          // a positive number, else a string
  bool optional;        // in its table, which may itself be left out unless it is a core one
  const char* meaning;  // what it holds, for a table that lacks it
};
// A module's key, in a table of its own that files may leave out (at start-up).
void add_machine_key(MachineKey key);
const std::vector<MachineKey>& module_machine_keys();

// A module's capacity per node for its MemCategory::Storage, from its table of the machine file
// (0: none there), registered at start-up: the planner's fit condition for that category.
using StorageCapacity = std::function<double(const Machine& machine)>;
void add_storage_capacity(StorageCapacity capacity);
// The smallest capacity the modules read off the machine; HUGE_VAL where none gives one.
double storage_capacity_per_node(const Machine& machine);

// Reads and validates a machine file; errors name the file, line, key and what was expected.
Machine load_machine(const std::string& path);

}  // namespace zm
