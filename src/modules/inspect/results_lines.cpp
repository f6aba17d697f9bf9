#include "modules/inspect/results_lines.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "core/text.hpp"
#include "core/zero_mesh.hpp"
#include "io/h5.hpp"
#include "io/output_dir.hpp"
#include "io/run_status.hpp"

namespace zm {

namespace fs = std::filesystem;

namespace {

// The abort record's text as one line, or "" when there is none.
std::string read_abort_record(const std::string& path) {
  std::error_code ignored;
  if (!fs::is_regular_file(path, ignored)) return "";
  std::ifstream in(path);
  std::string line, rank, exit_status, reason;
  while (std::getline(in, line)) {
    if (line.rfind("rank ", 0) == 0) rank = line.substr(5);
    if (line.rfind("exit_status ", 0) == 0) exit_status = line.substr(12);
    if (line.rfind("reason ", 0) == 0) {
      std::ostringstream rest;
      rest << in.rdbuf();  // the reason runs to the end of the file
      reason = line.substr(7) + rest.str();
      while (!reason.empty() && reason.back() == '\n') reason.pop_back();
    }
  }
  return fmt::format("aborted (rank {}, exit status {}): {}", rank.empty() ? "?" : rank,
                     exit_status.empty() ? "?" : exit_status, reason);
}

// Whether the process named by a lock's holder line ("PID 1234 on host n1 (started ...)") is
// alive: 1 yes, 0 no, -1 cannot tell (another host, or no PID in the line).
int holder_alive(const std::string& holder) {
  long pid = 0;
  char host[256] = {};
  if (std::sscanf(holder.c_str(), "PID %ld on host %255s", &pid, host) != 2 || pid <= 0) return -1;
  char here[256] = {};
  gethostname(here, sizeof(here) - 1);
  if (std::string(host) != here) return -1;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM ? 1 : 0;
}

// "a x 2, b x 1": the distinct names with their counts, in first-seen order.
std::string counted(const std::vector<std::string>& names) {
  std::vector<std::pair<std::string, int>> seen;
  for (const std::string& n : names) {
    auto it = std::find_if(seen.begin(), seen.end(), [&](const auto& s) { return s.first == n; });
    if (it == seen.end())
      seen.emplace_back(n, 1);
    else
      ++it->second;
  }
  std::string out;
  for (const auto& [name, count] : seen)
    out += fmt::format("{}{} x {}", out.empty() ? "" : ", ", name, count);
  return out;
}

}  // namespace

std::string describe_run_status(const std::string& results_path, const std::string& status) {
  if (status != "running") return status;
  const std::string aborted = read_abort_record(abort_record_path(results_path));
  if (!aborted.empty()) return aborted;
  const fs::path lock = fs::path(results_path).parent_path() / OutputDirectory::kLockFile;
  std::string holder;
  std::error_code ignored;
  if (fs::is_regular_file(lock, ignored)) std::getline(std::ifstream(lock), holder);
  switch (holder_alive(holder)) {
    case 1:
      return fmt::format("running ({})", holder);
    case 0:
      return fmt::format(
          "not closed cleanly: the run that wrote it ({}) has ended without recording how "
          "(killed, or its node was lost); the steps up to the last flush are in the file",
          holder);
    default:
      break;
  }
  return fmt::format("running, or not closed cleanly: {} cannot be checked from this host",
                     holder.empty() ? "no run's lock is beside it, so the run that wrote it"
                                    : "the run that wrote it (" + holder + ")");
}

std::string describe_manifest(hid_t file) {
  if (!h5::exists(file, "manifest")) return "";
  h5::Handle g = h5::open_group(file, "manifest");
  auto text = [&](const char* name) { return h5::read_attr_string(g, name); };
  std::string out = "  manifest\n";
  out += fmt::format("    zeromini        {} (git {})\n", text("zeromini_version"),
                     text("git_revision"));
  out += fmt::format("    Kokkos          {} (backends: {})\n", text("kokkos_version"),
                     text("kokkos_backends"));
  out += fmt::format("    MPI             {}\n", text("mpi_library"));
  out += fmt::format("    NCCL            {}\n", text("nccl_version"));
  out += fmt::format("    HDF5            {}\n", text("hdf5_version"));
  std::string model;  // each model dimension of this build the file records
  for (const ModelDimension& d : model_dimensions())
    if (h5::has_attr(g, d.name))
      model += fmt::format(" x {} {}", h5::read_attr_int(g, d.name), d.group);
  out += fmt::format("    ranks           {} on {} node(s): {} data-parallel{}\n",
                     h5::read_attr_int(g, "ranks"), h5::read_attr_int(g, "nodes"),
                     h5::read_attr_int(g, "data_parallel"), model);
  out += fmt::format("    hosts           {}\n", counted(h5::read_attr_strings(g, "hostnames")));
  out += fmt::format("    devices         {}\n", counted(h5::read_attr_strings(g, "device_names")));
  out += fmt::format("    deck            {} (resolved deck: attribute /manifest/deck)\n",
                     text("deck_path"));
  return out;
}

std::string describe_stage_throughput(hid_t group) {
  if (!h5::has_attr(group, "tflops_per_device")) return "";
  auto number = [&](const char* name) { return h5::read_attr_double(group, name); };
  std::string out = fmt::format(
      "    throughput: {} tokens/s, step {:.4g} s, {:.4g} model FLOP/token ({:.4g} with "
      "recomputation and padding)\n",
      thousands(number("tokens_per_second")), number("step_seconds"),
      number("model_flops_per_token"), number("hardware_flops_per_token"));
  out += fmt::format("    TFLOP/s: {:.4g} per device, {:.4g} in total (hardware {:.4g} per device)",
                     number("tflops_per_device"), number("tflops_total"),
                     number("hardware_tflops_per_device"));
  if (h5::has_attr(group, "mfu"))
    out +=
        fmt::format("; MFU {:.3g}% (HFU {:.3g}%) of {:.4g} TFLOP/s per device ({})\n",
                    100.0 * number("mfu"), 100.0 * number("hfu"), number("peak_tflops_per_device"),
                    h5::read_attr_string(group, "peak_source"));
  else
    out += "; MFU n/a (the run was given no peak)\n";
  return out;
}

}  // namespace zm
