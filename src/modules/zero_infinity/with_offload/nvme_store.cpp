// ZeRO-Infinity's NVMe home for the optimizer state (zero.offload_optimizer = "nvme"), a store of
// the offload module's host AdamW (src/modules/offload/host_state_store.hpp): each rank keeps the
// fp32 master, Adam m and v of its optimizer piece in a swap file in zero.nvme_dir, and brings
// one unit at a time into host memory for its update, in three staging slots:
//
//   unit u + 1 read  |  unit u updated by the host AdamW  |  unit u - 1 written back
//
// The host AdamW is offload's own, so the arithmetic is the same as with the state in host
// memory: losses equal bit for bit. The engine holds the state in MemCategory::Storage (counted
// per rank, no memory); checkpoints and the initial master reach it through copy_state.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include "comm/agree.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "modules/offload/host_state_store.hpp"
#include "modules/zero_infinity/async_io.hpp"
#include "modules/zero_infinity/nvme_settings.hpp"
#include "zero/collective_strategy.hpp"
#include "zero/engine.hpp"

namespace zm {

namespace {

constexpr int kSlots = 3;        // read ahead, updated, written behind
constexpr int kStateArrays = 3;  // master, Adam m, Adam v

// The bytes of one state array of a unit's piece in the file and in a slot (padded elements of
// the piece, as the host AdamW addresses them, rounded up to the O_DIRECT alignment).
int64_t array_bytes(int64_t padded, int optim_pieces) {
  return nvme::aligned_size(padded / optim_pieces * static_cast<int64_t>(sizeof(float)));
}

// Host staging: kSlots slots of the largest unit's three arrays, and room to align them.
std::vector<BufferSpec> staging_buffers(const StageSpec& spec, const ScheduleContext& context) {
  const int optim_pieces = pieces(context.mesh.mesh, context.mesh.placements(spec).optim);
  int64_t largest = 0;
  for (int u = 0; u < context.partition.num_units(); ++u)
    largest = std::max(largest, array_bytes(context.partition.unit(u).padded, optim_pieces));
  const int64_t bytes = kSlots * kStateArrays * largest + nvme::kAlignment;
  return {{"nvme_staging", MemCategory::Host, bytes / 4, 4}};
}

class NvmeStore final : public HostStateStore {
 public:
  NvmeStore(const ZeroEngine& engine, PlannedAllocator& alloc, const NvmeSettings& settings) {
    const Partition& partition = engine.partition();
    const Piece piece = engine.optimizer_piece();
    int64_t offset = 0, largest = 0;
    for (int u = 0; u < partition.num_units(); ++u) {
      units_.push_back({offset, array_bytes(partition.unit(u).padded, piece.count),
                        piece.index * (partition.unit(u).padded / piece.count)});
      offset += kStateArrays * units_.back().array_bytes;
      largest = std::max(largest, units_.back().array_bytes);
    }
    staging_ = alloc.take<float>("nvme_staging");
    const auto address = reinterpret_cast<uintptr_t>(staging_.data());
    char* aligned = reinterpret_cast<char*>((address + nvme::kAlignment - 1) / nvme::kAlignment *
                                            nvme::kAlignment);
    for (int s = 0; s < kSlots; ++s) slots_[s].data = aligned + s * kStateArrays * largest;
    Communicator& world = engine.comms().world();
    std::string error, fallback;
    try {
      file_ = std::make_unique<nvme::SwapFile>(
          settings.dir, fmt::format("rank {}'s optimizer state", world.rank()), offset);
      io_ = nvme::make_async_io(settings.engine, 2 * kSlots, &fallback);
    } catch (const Error& e) {
      error = e.what();
    }
    agree_or_fail(world.watchdog(), world.mpi_comm(), error, "making the NVMe swap files");
    log_root("NVMe: the optimizer state in {}, {:.1f} MiB per rank, through {}{}{}\n", settings.dir,
             static_cast<double>(file_->bytes()) / (1 << 20), io_->name(),
             file_->direct() ? " with O_DIRECT" : " through the page cache (O_DIRECT refused)",
             fallback.empty() ? "" : " (io_uring refused: " + fallback + ")");
  }

  void begin() override {
    drain();
    for (Slot& slot : slots_) slot.unit = -1;  // read anew: copy_state may have written the file
  }

  HostUnitState fetch(int u) override {
    Slot& slot = slots_[u % kSlots];
    if (slot.unit != u) read(u);
    finish(slot.read);
    if (u + 1 < static_cast<int>(units_.size())) read(u + 1);  // beside unit u's update
    const int64_t floats = units_[u].array_bytes / static_cast<int64_t>(sizeof(float));
    float* master = reinterpret_cast<float*>(slot.data);
    return {master, master + floats, master + 2 * floats};
  }

  void updated(int u) override {
    Slot& slot = slots_[u % kSlots];
    slot.write = submit(request(nvme::IoOp::Write, u, slot.data));
  }

  // Through a buffer of its own, synchronously (checkpoints and the initial master).
  void copy_state(int state, int u, int64_t e, int64_t n, float* host, bool to_host) override {
    drain();
    for (Slot& slot : slots_) slot.unit = -1;
    const UnitInFile& unit = units_[u];
    nvme::AlignedBuffer array(unit.array_bytes);
    nvme::IoRequest one{nvme::IoOp::Read,
                        file_.get(),
                        array.data(),
                        unit.array_bytes,
                        unit.offset + state * unit.array_bytes,
                        fmt::format("unit {}'s optimizer state {}", u, state)};
    io_->wait(io_->submit(one));
    float* values = static_cast<float*>(array.data()) + (e - unit.first);
    if (to_host) {
      std::memcpy(host, values, static_cast<size_t>(n) * sizeof(float));
      return;
    }
    std::memcpy(values, host, static_cast<size_t>(n) * sizeof(float));
    one.op = nvme::IoOp::Write;
    io_->wait(io_->submit(one));
  }

 private:
  struct UnitInFile {
    int64_t offset;       // of its master array; Adam m and v follow
    int64_t array_bytes;  // of each array
    int64_t first;        // the unit's element at the arrays' start (the piece's first)
  };
  struct Slot {
    char* data = nullptr;
    int unit = -1;                  // whose state it holds or receives
    int64_t read = -1, write = -1;  // tickets in flight
  };

  nvme::IoRequest request(nvme::IoOp op, int u, char* data) const {
    return {op,
            file_.get(),
            data,
            kStateArrays * units_[u].array_bytes,
            units_[u].offset,
            fmt::format("unit {}'s optimizer state", u)};
  }
  void read(int u) {
    Slot& slot = slots_[u % kSlots];
    finish(slot.write);  // the unit it held is in the file
    finish(slot.read);
    slot.unit = u;
    slot.read = submit(request(nvme::IoOp::Read, u, slot.data));
  }
  // A step's transfer, counted for the run's figures.
  int64_t submit(nvme::IoRequest request) {
    nvme::IoTotals& totals = nvme::this_rank_io();
    const bool read = request.op == nvme::IoOp::Read;
    ++(read ? totals.reads : totals.writes);
    (read ? totals.bytes_read : totals.bytes_written) += request.bytes;
    return io_->submit(std::move(request));
  }
  void finish(int64_t& ticket) {
    if (ticket < 0) return;
    const int64_t waited = ticket;
    ticket = -1;
    const auto start = std::chrono::steady_clock::now();
    io_->wait(waited);
    nvme::this_rank_io().seconds_waited +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  void drain() {
    for (Slot& slot : slots_) {
      finish(slot.read);
      finish(slot.write);
    }
  }

  std::vector<UnitInFile> units_;
  TrackedBuffer<float> staging_;
  std::array<Slot, kSlots> slots_;
  std::unique_ptr<nvme::SwapFile> file_;
  // Last: destroyed first, waiting for its transfers while the file and the staging still exist.
  std::unique_ptr<nvme::AsyncIo> io_;
};

}  // namespace

void register_module_zero_infinity_with_offload() {
  HostStoreKind kind;
  kind.value = "nvme";
  kind.check = check_nvme_settings;
  kind.buffers = staging_buffers;
  kind.maker = [](const Deck& deck) -> HostStoreMaker {
    const NvmeSettings settings = nvme_settings(deck);
    return [settings](const ZeroEngine& engine, PlannedAllocator& alloc) {
      return std::make_unique<NvmeStore>(engine, alloc, settings);
    };
  };
  add_host_store(std::move(kind));
}

}  // namespace zm
