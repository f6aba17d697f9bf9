#include "plan/machine.hpp"

#include <fmt/format.h>

#include <toml++/toml.h>
#include <map>
#include <set>

#include "core/error.hpp"
#include "core/regular_file.hpp"

namespace zm {

namespace {

std::string where(const std::string& path, const toml::source_region& region) {
  return region.begin.line ? fmt::format("{}:{}:{}", path, region.begin.line, region.begin.column)
                           : path;
}

}  // namespace

namespace {

// section -> key -> whether the value is a number (else a string).
using MachineSchema = std::map<std::string, std::map<std::string, bool>>;

// Keys a file may leave out: a peak not published (or not measured) stays absent (0), never a
// guess; a link latency not given is not charged.
bool optional_key(const std::string& full) {
  return full == "machine.description" || full.rfind("compute.peak_tflops_", 0) == 0 ||
         full == "host.link_latency_us";
}

// A section a file may leave out: without [host] the planner prices nothing in host memory there.
bool optional_section(const std::string& section) {
  return section == "host";
}

// What a [host] key holds, for the message that says it is missing.
const char* host_key_meaning(const std::string& key) {
  if (key == "memory_per_node_gib") return "the host memory of one node in GiB";
  if (key == "link") return "the name of the host-device link, e.g. \"PCIe Gen5 x16\"";
  if (key == "link_bandwidth_gbs")
    return "the host-device link's bandwidth per device and direction in GB/s";
  if (key == "adamw_gparams_per_s")
    return "the host's AdamW rate for one device's rank in 1e9 parameters/s";
  return "a value";
}

const MachineSchema& machine_schema() {
  static const MachineSchema schema = {{"machine",
                                        {{"name", false},
                                         {"description", false},
                                         {"devices_per_node", true},
                                         {"device_memory_gib", true}}},
                                       {"compute",
                                        {{"sustained_tflops_fp32", true},
                                         {"sustained_tflops_mixed", true},
                                         {"memory_bandwidth_gbs", true},
                                         {"peak_tflops_fp32", true},
                                         {"peak_tflops_tf32", true},
                                         {"peak_tflops_mixed", true}}},
                                       {"network",
                                        {{"intra_node_bandwidth_gbs", true},
                                         {"intra_node_latency_us", true},
                                         {"inter_node_bandwidth_gbs", true},
                                         {"inter_node_latency_us", true}}},
                                       {"host",
                                        {{"memory_per_node_gib", true},
                                         {"link", false},
                                         {"link_bandwidth_gbs", true},
                                         {"link_latency_us", true},
                                         {"adamw_gparams_per_s", true}}}};
  return schema;
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

// Every key of the file checked against the schema, into "section.key" -> value.
struct MachineValues {
  std::map<std::string, double> numbers;
  std::map<std::string, std::string> strings;
  std::map<std::string, toml::source_region> sections;  // where each section the file has begins
};

MachineValues read_values(const toml::table& root, const std::string& path) {
  MachineValues values;
  for (auto&& [section_key, section_node] : root) {
    const std::string section(section_key.str());
    auto known = machine_schema().find(section);
    if (known == machine_schema().end() || !section_node.is_table())
      fail(
          "{}: unknown section [{}]; expected [machine], [compute], [network] and (optional) "
          "[host]",
          where(path, section_key.source()), section);
    values.sections[section] = section_key.source();
    for (auto&& [key, node] : *section_node.as_table()) {
      const std::string name(key.str());
      auto spec = known->second.find(name);
      if (spec == known->second.end())
        fail("{}: unknown key '{}.{}'", where(path, key.source()), section, name);
      const std::string full = section + "." + name;
      if (spec->second) {
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
  return values;
}

}  // namespace

Machine load_machine(const std::string& path) {
  MachineValues v = read_values(parse_machine_file(path), path);
  for (const auto& [section, keys] : machine_schema()) {
    const auto present = v.sections.find(section);
    if (optional_section(section) && present == v.sections.end()) continue;
    for (const auto& [key, is_number] : keys) {
      const std::string full = section + "." + key;
      if (optional_key(full)) continue;
      if (is_number ? v.numbers.count(full) : v.strings.count(full)) continue;
      // A key an optional table needs is named at the table, with what it holds.
      if (optional_section(section))
        fail("{}: [{}] lacks key '{}' (expected {}; see inputs/machines/dgx-h100.toml)",
             where(path, present->second), section, full, host_key_meaning(key));
      fail("{}: missing key '{}' (see inputs/machines/ for the format)", path, full);
    }
  }
  Machine m;
  m.path = path;
  m.name = v.strings["machine.name"];
  m.description = v.strings["machine.description"];
  m.devices_per_node = static_cast<int64_t>(v.numbers["machine.devices_per_node"]);
  m.device_memory_bytes = v.numbers["machine.device_memory_gib"] * 1024.0 * 1024.0 * 1024.0;
  m.sustained_flops_fp32 = v.numbers["compute.sustained_tflops_fp32"] * 1e12;
  m.sustained_flops_mixed = v.numbers["compute.sustained_tflops_mixed"] * 1e12;
  m.memory_bandwidth = v.numbers["compute.memory_bandwidth_gbs"] * 1e9;
  m.intra_node_bandwidth = v.numbers["network.intra_node_bandwidth_gbs"] * 1e9;
  m.intra_node_latency = v.numbers["network.intra_node_latency_us"] * 1e-6;
  m.inter_node_bandwidth = v.numbers["network.inter_node_bandwidth_gbs"] * 1e9;
  m.inter_node_latency = v.numbers["network.inter_node_latency_us"] * 1e-6;
  auto peak = [&](const char* key) {
    auto found = v.numbers.find(std::string("compute.") + key);
    return found == v.numbers.end() ? 0.0 : found->second * 1e12;
  };
  m.peak_flops_fp32 = peak("peak_tflops_fp32");
  m.peak_flops_tf32 = peak("peak_tflops_tf32");
  m.peak_flops_mixed = peak("peak_tflops_mixed");
  if (m.devices_per_node < 1) fail("{}: machine.devices_per_node must be >= 1", path);
  if (v.sections.count("host")) {
    HostSide host;
    host.memory_per_node_bytes = v.numbers["host.memory_per_node_gib"] * 1024.0 * 1024.0 * 1024.0;
    host.link = v.strings["host.link"];
    host.link_bandwidth = v.numbers["host.link_bandwidth_gbs"] * 1e9;
    const auto latency = v.numbers.find("host.link_latency_us");
    host.link_latency = latency == v.numbers.end() ? 0.0 : latency->second * 1e-6;
    host.adamw_params_per_second = v.numbers["host.adamw_gparams_per_s"] * 1e9;
    m.host = host;
  }
  return m;
}

}  // namespace zm
