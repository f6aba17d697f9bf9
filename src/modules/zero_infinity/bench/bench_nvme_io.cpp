// The NVMe tier's I/O engines on this machine's disk: a swap file of 256 MiB written, then read,
// whole, in 4 MiB transfers with 8 in flight, through each engine this build has
// (NvmeIo/<engine>/<write|read>: bytes_per_second). The swap file lies in $ZEROMINI_NVME_DIR, or
// /var/tmp. scripts/nvme-bandwidth.sh runs it beside `dd oflag=direct` / `iflag=direct` on the
// same directory, in alternated rounds, and prints the ratios.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "modules/zero_infinity/async_io.hpp"

namespace {

using namespace zm::nvme;

constexpr int64_t kFileBytes = int64_t{256} << 20;
constexpr int64_t kTransferBytes = int64_t{4} << 20;
constexpr int kInFlight = 8;

std::string bench_dir() {
  const char* dir = std::getenv("ZEROMINI_NVME_DIR");
  return dir != nullptr && *dir != '\0' ? dir : "/var/tmp";
}

// The whole file in transfers, kInFlight buffers reused in turn.
void whole_file(AsyncIo& io, const SwapFile& file, std::vector<AlignedBuffer>& buffers, IoOp op) {
  std::vector<int64_t> tickets(buffers.size(), -1);
  for (int64_t offset = 0, i = 0; offset < kFileBytes; offset += kTransferBytes, ++i) {
    const size_t slot = static_cast<size_t>(i) % buffers.size();
    if (tickets[slot] >= 0) io.wait(tickets[slot]);
    tickets[slot] = io.submit({op, &file, buffers[slot].data(), kTransferBytes, offset, "bench"});
  }
  for (int64_t ticket : tickets)
    if (ticket >= 0) io.wait(ticket);
}

void nvme_io(benchmark::State& state, IoEngine engine, IoOp op) {
  std::unique_ptr<AsyncIo> io;
  try {
    io = make_async_io(engine, kInFlight, nullptr);
  } catch (const zm::Error& refused) {
    state.SkipWithError(refused.what());
    return;
  }
  SwapFile file(bench_dir(), "zeromini-bench", kFileBytes);
  std::vector<AlignedBuffer> buffers;
  for (int b = 0; b < kInFlight; ++b) buffers.emplace_back(kTransferBytes);
  whole_file(*io, file, buffers, IoOp::Write);  // every block written once before it is read
  for (auto _ : state) whole_file(*io, file, buffers, op);
  state.SetBytesProcessed(state.iterations() * kFileBytes);
  state.SetLabel(std::string(io->name()) + (file.direct() ? ", O_DIRECT" : ", page cache"));
}

// NvmeIo/<engine>/<operation> for each engine and operation.
const bool kRegistered = [] {
  for (const auto& [engine, engine_name] :
       {std::pair{IoEngine::Threads, "threads"}, std::pair{IoEngine::Uring, "io_uring"}})
    for (const auto& [op, op_name] :
         {std::pair{IoOp::Write, "write"}, std::pair{IoOp::Read, "read"}})
      benchmark::RegisterBenchmark(fmt::format("NvmeIo/{}/{}", engine_name, op_name).c_str(),
                                   nvme_io, engine, op)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
  return true;
}();

}  // namespace
