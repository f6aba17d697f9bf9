// With the module estimate: the [nvme] side of this machine measured at start-up, so that a run
// with state on NVMe and no --machine file is priced too. Where the deck keeps state there, every
// rank writes and then reads a 64 MiB swap file in zero.nvme_dir through the run's I/O engine (4
// MiB requests, 8 in flight), all ranks at once as in a step; the node's bandwidth is its ranks'
// bytes over the slowest rank's seconds, its capacity the directory's free space.
#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <vector>

#include "comm/communicator.hpp"
#include "core/deck_keys.hpp"
#include "core/error.hpp"
#include "core/timer.hpp"
#include "modules/estimate/machine_measurements.hpp"
#include "modules/zero_infinity/async_io.hpp"
#include "modules/zero_infinity/nvme_settings.hpp"
#include "modules/zero_infinity/swap_file.hpp"

namespace zm {

namespace {

constexpr int64_t kFileBytes = 64 << 20, kRequestBytes = 4 << 20;
constexpr int kInFlight = 8;

// Seconds to move the whole file each way: {write, read}.
std::array<double, 2> time_file(const NvmeSettings& settings) {
  nvme::SwapFile file(settings.dir, "the estimate's measurement", kFileBytes);
  const std::unique_ptr<nvme::AsyncIo> io =
      nvme::make_async_io(settings.engine, kInFlight, nullptr);
  std::vector<nvme::AlignedBuffer> buffers;
  for (int i = 0; i < kInFlight; ++i) buffers.emplace_back(kRequestBytes);
  std::array<double, 2> seconds{};
  for (const nvme::IoOp op : {nvme::IoOp::Write, nvme::IoOp::Read}) {
    const double start = wall_seconds();
    std::vector<int64_t> tickets;
    for (int64_t offset = 0, i = 0; offset < kFileBytes; offset += kRequestBytes, ++i) {
      if (tickets.size() == kInFlight) {
        io->wait(tickets.front());
        tickets.erase(tickets.begin());
      }
      tickets.push_back(io->submit({op, &file, buffers[static_cast<size_t>(i % kInFlight)].data(),
                                    kRequestBytes, offset, "the estimate's measurement"}));
    }
    for (const int64_t ticket : tickets) io->wait(ticket);
    seconds[op == nvme::IoOp::Write ? 0 : 1] = wall_seconds() - start;
  }
  return seconds;
}

std::string measure_nvme(const Deck& deck, Communicator& comm, Machine& machine) {
  if (module_setting(deck, "zero.offload_optimizer", "") != "nvme") return "";
  const NvmeSettings settings = nvme_settings(deck);
  std::array<double, 3> worst{};  // write s, read s, and -(free bytes): the slowest and the least
  try {
    const std::array<double, 2> seconds = time_file(settings);
    worst = {seconds[0], seconds[1], -static_cast<double>(nvme::free_bytes(settings.dir))};
  } catch (const Error&) {
    worst = {-1, -1, 0};  // the run itself says what is wrong with the directory
  }
  MPI_Allreduce(MPI_IN_PLACE, worst.data(), 3, MPI_DOUBLE, MPI_MAX, comm.mpi_comm());
  if (worst[0] <= 0 || worst[1] <= 0) return "NVMe: not measured";
  const double node_bytes =
      static_cast<double>(kFileBytes) * static_cast<double>(machine.devices_per_node);
  machine.numbers["nvme.write_bandwidth_gbs"] = node_bytes / worst[0] / 1e9;
  machine.numbers["nvme.read_bandwidth_gbs"] = node_bytes / worst[1] / 1e9;
  machine.numbers["nvme.capacity_per_node_tb"] = -worst[2] / 1e12;
  return fmt::format("NVMe ({}): read {:.2f} GB/s, write {:.2f} GB/s per node, {:.3g} TB free",
                     settings.dir, machine.number("nvme.read_bandwidth_gbs"),
                     machine.number("nvme.write_bandwidth_gbs"),
                     machine.number("nvme.capacity_per_node_tb"));
}

}  // namespace

void register_module_zero_infinity_with_estimate() {
  add_machine_measurement(measure_nvme);
}

}  // namespace zm
