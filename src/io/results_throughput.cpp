#include "io/results_throughput.hpp"

#include <fmt/format.h>

#include <cmath>

#include "comm/communicator.hpp"
#include "core/text.hpp"
#include "io/h5.hpp"

namespace zm {

namespace {

void write_per_rank(hid_t group, const std::string& name, const std::vector<double>& values,
                    hsize_t ranks, const std::string& units) {
  h5::write_dataset(group, name, values, {ranks, static_cast<hsize_t>(kCommOps)});
  std::vector<std::string> ops;
  for (int op = 0; op < kCommOps; ++op) ops.push_back(comm_op_name(static_cast<CommOp>(op)));
  h5::Handle set(H5Dopen2(group, name.c_str(), H5P_DEFAULT));
  h5::write_attr(set, "units", units);
  h5::write_attr(set, "columns", ops);
  h5::write_attr(set, "dimensions", std::vector<std::string>{"rank", "column"});
}

}  // namespace

void write_stage_throughput(hid_t group, const ResultsStage& s, hsize_t ranks) {
  const Throughput& t = s.throughput;
  h5::write_attr(group, "tokens_per_second", t.tokens_per_second);
  h5::write_attr(group, "step_seconds", t.step_seconds);
  h5::write_attr(group, "model_flops_per_token", t.model_flops_per_token);
  h5::write_attr(group, "hardware_flops_per_token", t.hardware_flops_per_token);
  h5::write_attr(group, "model_flops_per_step", t.model_flops_per_step);
  h5::write_attr(group, "hardware_flops_per_step", t.hardware_flops_per_step);
  h5::write_attr(group, "tflops_per_device", t.tflops_per_device);
  h5::write_attr(group, "tflops_total", t.tflops_total);
  h5::write_attr(group, "hardware_tflops_per_device", t.hardware_tflops_per_device);
  // MFU exists only against a stated peak: without one the attributes are absent.
  if (std::isfinite(t.mfu)) {
    h5::write_attr(group, "peak_tflops_per_device", t.peak_tflops_per_device);
    h5::write_attr(group, "peak_source", t.peak_source);
    h5::write_attr(group, "mfu", t.mfu);
    h5::write_attr(group, "hfu", t.hfu);
  }
  write_per_rank(group, "comm_bus_bytes_per_step", s.comm_bus_bytes_per_step, ranks,
                 "ring bytes sent per rank per timed step");
  write_per_rank(group, "comm_in_flight_seconds", s.comm_in_flight_seconds, ranks,
                 "seconds per timed step with a collective of the kind in flight");
  write_per_rank(group, "comm_busbw", s.comm_busbw, ranks,
                 "bytes/s: bus bandwidth (nccl-tests convention) = comm_bus_bytes_per_step / "
                 "comm_in_flight_seconds; NaN where none was timed");
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
  if (!h5::exists(group, "comm_busbw")) return out;
  std::vector<hsize_t> dims;
  const auto busbw = h5::read_doubles(group, "comm_busbw", dims);
  std::string line;
  for (int op = 0; op < kCommOps && !busbw.empty(); ++op)
    if (std::isfinite(busbw[static_cast<size_t>(op)]))
      line += fmt::format(" {} {:.4g}", comm_op_name(static_cast<CommOp>(op)),
                          busbw[static_cast<size_t>(op)] / 1e9);
  out += "    busbw GB/s (rank 0):" + (line.empty() ? std::string(" no collectives") : line) + "\n";
  return out;
}

}  // namespace zm
