#include "plan/machine.hpp"

#include <fmt/format.h>

#include <toml++/toml.h>
#include <algorithm>
#include <cstring>

#include "core/error.hpp"
#include "core/modules.hpp"
#include "core/registry.hpp"
#include "core/regular_file.hpp"

namespace zm {

ZM_REGISTRY(MachineKey, add_machine_key, module_machine_keys)
ZM_REGISTRY(StorageCapacity, add_storage_capacity, storage_capacities)
double storage_capacity_per_node(const Machine& machine) {
  double smallest = HUGE_VAL;
  for (const StorageCapacity& capacity : storage_capacities())
    if (const double bytes = capacity(machine); bytes > 0) smallest = std::min(smallest, bytes);
  return smallest;
}

namespace {

std::string where(const std::string& path, const toml::source_region& region) {
  return region.begin.line ? fmt::format("{}:{}:{}", path, region.begin.line, region.begin.column)
                           : path;
}

// Every table but the core's three may be left out: without [host] the planner prices nothing
// in host memory there, without a module's table the module nothing of its own.
bool optional_table(const std::string& section) {
  return section != "compute" && section != "machine" && section != "network";
}

// Sorted by name: the order in which missing keys are reported.
const MachineKey kKeys[] = {
    {"compute.memory_bandwidth_gbs", true, false, ""},
    {"compute.peak_tflops_fp32", true, true, ""},
    {"compute.peak_tflops_mixed", true, true, ""},
    {"compute.peak_tflops_tf32", true, true, ""},
    {"compute.sustained_tflops_fp32", true, false, ""},
    {"compute.sustained_tflops_mixed", true, false, ""},
    {"host.adamw_gparams_per_s", true, false,
     "the host's AdamW rate for one device's rank in 1e9 parameters/s"},
    {"host.link", false, false, "the name of the host-device link, e.g. \"PCIe Gen5 x16\""},
    {"host.link_bandwidth_gbs", true, false,
     "the host-device link's bandwidth per device and direction in GB/s"},
    {"host.link_latency_us", true, true, ""},
    {"host.memory_per_node_gib", true, false, "the host memory of one node in GiB"},
    {"machine.description", false, true, ""},
    {"machine.device_memory_gib", true, false, ""},
    {"machine.devices_per_node", true, false, ""},
    {"machine.name", false, false, ""},
    {"network.inter_node_bandwidth_gbs", true, false, ""},
    {"network.inter_node_latency_us", true, false, ""},
    {"network.intra_node_bandwidth_gbs", true, false, ""},
    {"network.intra_node_latency_us", true, false, ""},
};

// The core's tables, then the modules' (add_machine_key), as a message names them.
std::string known_tables() {
  std::string tables = "[machine], [compute], [network] and (optional) [host]";
  for (const MachineKey& key : module_machine_keys()) {
    const std::string table = "[" + std::string(key.name, std::strcspn(key.name, ".")) + "]";
    if (tables.find(table) == std::string::npos) tables += ", " + table;
  }
  return tables;
}

toml::table parse_machine_file(const std::string& path) {
  require_regular_file(path, "machine file");  // before the open: a FIFO would block it
  try {
    return toml::parse_file(path);
  } catch (const toml::parse_error& err) {
    if (err.source().begin.line == 0)
      fail("{}: cannot read the machine file: {}", path, err.description());
    fail("{}: TOML syntax error: {}", where(path, err.source()), err.description());
  }
}

// Every key of the file checked into m.numbers and m.strings; returns where each table begins.
std::map<std::string, toml::source_region> read_values(const toml::table& root,
                                                       const std::string& path, Machine& m) {
  std::vector<MachineKey> keys(std::begin(kKeys), std::end(kKeys));
  keys.insert(keys.end(), module_machine_keys().begin(), module_machine_keys().end());
  std::map<std::string, toml::source_region> tables;
  for (auto&& [table_key, table_node] : root) {
    const std::string section(table_key.str());
    // The table of a module this build leaves out (module.cmake: PROVIDES "machine table [x]"):
    // no plan here prices what it describes.
    if (table_node.is_table() && known_tables().find("[" + section + "]") == std::string::npos &&
        !option_providing("machine table [" + section + "]").empty())
      continue;
    if (known_tables().find("[" + section + "]") == std::string::npos || !table_node.is_table())
      fail("{}: unknown section [{}]; expected {}", where(path, table_key.source()), section,
           known_tables());
    tables[section] = table_key.source();
    for (auto&& [key, node] : *table_node.as_table()) {
      const std::string full = section + "." + std::string(key.str());
      const auto spec = std::find_if(keys.begin(), keys.end(),
                                     [&](const MachineKey& k) { return full == k.name; });
      if (spec == keys.end()) fail("{}: unknown key '{}'", where(path, key.source()), full);
      const std::optional<double> number = node.value<double>();
      const std::optional<std::string> text = node.value<std::string>();
      if (spec->number ? !(number && *number > 0) : !text)
        fail("{}: {} must be {}", where(path, key.source()), full,
             spec->number ? "a positive number" : "a string");
      if (spec->number)
        m.numbers[full] = *number;
      else
        m.strings[full] = *text;
    }
  }
  for (const MachineKey& key : keys) {
    const std::string full = key.name, section = full.substr(0, full.find('.'));
    const auto table = tables.find(section);
    if (key.optional || (optional_table(section) && table == tables.end())) continue;
    if (key.number ? m.numbers.count(full) : m.strings.count(full)) continue;
    // A key an optional table needs is named at the table, with what it holds.
    if (optional_table(section))
      fail("{}: [{}] lacks key '{}' (expected {}; see inputs/machines/dgx-h100.toml)",
           where(path, table->second), section, full, key.meaning);
    fail("{}: missing key '{}' (see inputs/machines/ for the format)", path, full);
  }
  return tables;
}

}  // namespace

Machine load_machine(const std::string& path) {
  Machine m;
  const auto tables = read_values(parse_machine_file(path), path, m);
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  m.path = path;
  m.name = m.strings["machine.name"];
  m.description = m.strings["machine.description"];
  m.devices_per_node = static_cast<int64_t>(m.number("machine.devices_per_node", 1));
  m.device_memory_bytes = m.number("machine.device_memory_gib", kGiB);
  m.sustained_flops_fp32 = m.number("compute.sustained_tflops_fp32", 1e12);
  m.sustained_flops_mixed = m.number("compute.sustained_tflops_mixed", 1e12);
  m.memory_bandwidth = m.number("compute.memory_bandwidth_gbs", 1e9);
  m.intra_node_bandwidth = m.number("network.intra_node_bandwidth_gbs", 1e9);
  m.intra_node_latency = m.number("network.intra_node_latency_us", 1e-6);
  m.inter_node_bandwidth = m.number("network.inter_node_bandwidth_gbs", 1e9);
  m.inter_node_latency = m.number("network.inter_node_latency_us", 1e-6);
  if (m.devices_per_node < 1) fail("{}: machine.devices_per_node must be >= 1", path);
  if (tables.count("host")) {
    HostSide host;
    host.memory_per_node_bytes = m.number("host.memory_per_node_gib", kGiB);
    host.link = m.strings["host.link"];
    host.link_bandwidth = m.number("host.link_bandwidth_gbs", 1e9);
    host.link_latency = m.number("host.link_latency_us", 1e-6);
    host.adamw_params_per_second = m.number("host.adamw_gparams_per_s", 1e9);
    m.host = host;
  }
  return m;
}

}  // namespace zm
