#include "plan/machine.hpp"

#include <fmt/format.h>

#include <toml++/toml.h>
#include <cstring>
#include <map>

#include "core/error.hpp"
#include "core/regular_file.hpp"

namespace zm {

namespace {

std::string where(const std::string& path, const toml::source_region& region) {
  return region.begin.line ? fmt::format("{}:{}:{}", path, region.begin.line, region.begin.column)
                           : path;
}

// A key of a machine file. An optional one may be left out: a peak not published (or not
// measured) stays absent (0), never a guess; a link latency not given is not charged.
struct MachineKey {
  const char* name;  // "section.key"
  bool number;       // a positive number, else a string
  bool optional;
  const char* meaning;  // what it holds, where an optional table lacks it
};

// A table a file may leave out: without [host] the planner prices nothing in host memory there.
const char* const kOptionalTable = "host";

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

const MachineKey* find_key(const std::string& name) {
  for (const MachineKey& key : kKeys)
    if (name == key.name) return &key;
  return nullptr;
}

bool known_table(const std::string& section) {
  for (const MachineKey& key : kKeys)
    if (std::strncmp(key.name, (section + ".").c_str(), section.size() + 1) == 0) return true;
  return false;
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

// Every key of the file checked, by "section.key".
struct MachineValues {
  std::map<std::string, double> numbers;
  std::map<std::string, std::string> strings;
  std::map<std::string, toml::source_region> tables;  // where each table the file has begins

  // The number times `scale`; 0 where the file has none.
  double number(const std::string& name, double scale) const {
    const auto found = numbers.find(name);
    return found == numbers.end() ? 0.0 : found->second * scale;
  }
};

MachineValues read_values(const toml::table& root, const std::string& path) {
  MachineValues values;
  for (auto&& [table_key, table_node] : root) {
    const std::string section(table_key.str());
    if (!known_table(section) || !table_node.is_table())
      fail(
          "{}: unknown section [{}]; expected [machine], [compute], [network] and (optional) "
          "[host]",
          where(path, table_key.source()), section);
    values.tables[section] = table_key.source();
    for (auto&& [key, node] : *table_node.as_table()) {
      const std::string full = section + "." + std::string(key.str());
      const MachineKey* spec = find_key(full);
      if (spec == nullptr) fail("{}: unknown key '{}'", where(path, key.source()), full);
      if (spec->number) {
        std::optional<double> value = node.value<double>();
        if (!value || !(*value > 0))
          fail("{}: {} must be a positive number", where(path, key.source()), full);
        values.numbers[full] = *value;
      } else {
        std::optional<std::string> value = node.value<std::string>();
        if (!value) fail("{}: {} must be a string", where(path, key.source()), full);
        values.strings[full] = *value;
      }
    }
  }
  for (const MachineKey& key : kKeys) {
    const std::string full = key.name, section = full.substr(0, full.find('.'));
    const auto table = values.tables.find(section);
    const bool optional_table = section == kOptionalTable;
    if (key.optional || (optional_table && table == values.tables.end())) continue;
    if (key.number ? values.numbers.count(full) : values.strings.count(full)) continue;
    // A key an optional table needs is named at the table, with what it holds.
    if (optional_table)
      fail("{}: [{}] lacks key '{}' (expected {}; see inputs/machines/dgx-h100.toml)",
           where(path, table->second), section, full, key.meaning);
    fail("{}: missing key '{}' (see inputs/machines/ for the format)", path, full);
  }
  return values;
}

}  // namespace

Machine load_machine(const std::string& path) {
  MachineValues v = read_values(parse_machine_file(path), path);
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  Machine m;
  m.path = path;
  m.name = v.strings["machine.name"];
  m.description = v.strings["machine.description"];
  m.devices_per_node = static_cast<int64_t>(v.number("machine.devices_per_node", 1));
  m.device_memory_bytes = v.number("machine.device_memory_gib", kGiB);
  m.sustained_flops_fp32 = v.number("compute.sustained_tflops_fp32", 1e12);
  m.sustained_flops_mixed = v.number("compute.sustained_tflops_mixed", 1e12);
  m.memory_bandwidth = v.number("compute.memory_bandwidth_gbs", 1e9);
  m.intra_node_bandwidth = v.number("network.intra_node_bandwidth_gbs", 1e9);
  m.intra_node_latency = v.number("network.intra_node_latency_us", 1e-6);
  m.inter_node_bandwidth = v.number("network.inter_node_bandwidth_gbs", 1e9);
  m.inter_node_latency = v.number("network.inter_node_latency_us", 1e-6);
  m.peak_flops_fp32 = v.number("compute.peak_tflops_fp32", 1e12);
  m.peak_flops_tf32 = v.number("compute.peak_tflops_tf32", 1e12);
  m.peak_flops_mixed = v.number("compute.peak_tflops_mixed", 1e12);
  if (m.devices_per_node < 1) fail("{}: machine.devices_per_node must be >= 1", path);
  if (v.tables.count(kOptionalTable)) {
    HostSide host;
    host.memory_per_node_bytes = v.number("host.memory_per_node_gib", kGiB);
    host.link = v.strings["host.link"];
    host.link_bandwidth = v.number("host.link_bandwidth_gbs", 1e9);
    host.link_latency = v.number("host.link_latency_us", 1e-6);
    host.adamw_params_per_second = v.number("host.adamw_gparams_per_s", 1e9);
    m.host = host;
  }
  return m;
}

}  // namespace zm
