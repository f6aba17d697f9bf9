// ZeRO-Infinity's NVMe home for the optimizer state (zero.offload_optimizer = "nvme"), a store of
// the offload module's host AdamW (src/modules/offload/host_state_store.hpp): each rank keeps the
// fp32 master, Adam m and v of its optimizer piece in a swap file in zero.nvme_dir, and brings
// one unit at a time into host memory for its update, in three staging slots:
//
//   unit u + 1 read  |  unit u updated by the host AdamW  |  unit u - 1 written back
//
// With zero.offload_params = "nvme" (stage 3) the file holds the parameter shard too: under bf16
// a fourth array of each unit, which AdamW writes in the slot beside the master; in fp32 the
// master itself. Each gather of a unit reads its shard (fetch_shard) for offload's staged copy to
// the device, in one of two buffers of its own, while the read of the next gather's shard goes on
// in the other: the gathers come in the same order every step, which the store learns from the
// step before (as DeepSpeed's parameter swapper learns its prefetch from the first step). A
// gather that is not the one read ahead (the first step's, those after a forward-only pass)
// reads its shard there and then, and the store reads ahead no more until the next step.
//
// With zero.nvme_gradients the file holds the reduced gradient shard too, first in each unit's
// part: each micro-step's sum lands in one of two gradient buffers (gradients), is summed there
// and written (gradients_written) while the next unit's arrives in the other; a later micro-step
// reads the unit's array first to add to it. The optimizer step reads it with the state and
// writes back only the state.
//
// The host AdamW is offload's own, so the arithmetic is the same as with the state in host
// memory: losses equal bit for bit. The engine holds the state in MemCategory::Storage (counted
// per rank, no memory); checkpoints and the initial master reach it through copy_state.
//
// Each of a step's transfers passes the fault point "nvme.transfer" (core/fault_points.hpp; the
// subject: the nvme::IoRequest* about to be submitted), where the module fault_injection makes
// it fail as a drive would (src/modules/fault_injection/with_zero_infinity/).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "comm/agree.hpp"
#include "core/abort_job.hpp"
#include "core/compat.hpp"
#include "core/error.hpp"
#include "core/exit_codes.hpp"
#include "core/fault_points.hpp"
#include "core/log.hpp"
#include "core/spans.hpp"
#include "core/timer.hpp"
#include "modules/offload/host_state_store.hpp"
#include "modules/zero_infinity/async_io.hpp"
#include "modules/zero_infinity/nvme_figures.hpp"
#include "modules/zero_infinity/nvme_layout.hpp"
#include "modules/zero_infinity/nvme_settings.hpp"
#include "modules/zero_infinity/with_offload/nvme_plan.hpp"
#include "zero/collective_strategy.hpp"
#include "zero/engine.hpp"

namespace zm {

namespace {

using nvme::kStateArrays;

// Host staging (nvme_layout.hpp): zero.nvme_buffers slots.
std::vector<BufferSpec> staging_buffers(const StageSpec& spec, const ScheduleContext& context,
                                        int buffers) {
  const int optim_pieces = pieces(context.mesh.mesh, context.mesh.placements(spec).optim);
  const nvme::FileContents contents =
      nvme::file_contents(context.options.homes, context.options.policy, optim_pieces);
  return {{"nvme_staging", MemCategory::Host,
           nvme::staging_bytes(context.partition, contents, buffers) / 4, 4}};
}

class NvmeStore final : public HostStateStore {
 public:
  NvmeStore(const ZeroEngine& engine, PlannedAllocator& alloc, const NvmeSettings& settings)
      : slots_(static_cast<size_t>(settings.buffers)), block_bytes_(settings.block_bytes) {
    const Partition& partition = engine.partition();
    const Piece piece = engine.optimizer_piece();
    contents_ = nvme::file_contents(engine.homes(), engine.options().policy, piece.count);
    int64_t offset = 0, largest = 0;
    for (int u = 0; u < partition.num_units(); ++u) {
      const int64_t padded = partition.unit(u).padded;
      ZM_ASSERT(!contents_.params || padded / piece.count == partition.unit(u).shard,
                "unit {}: the parameter shard ({}) is not the optimizer piece ({})", u,
                partition.unit(u).shard, padded / piece.count);
      units_.push_back({offset, nvme::state_array_bytes(padded, piece.count),
                        nvme::unit_bytes(padded, contents_), piece.index * (padded / piece.count),
                        padded / piece.count, nvme::grad_array_bytes(padded, contents_)});
      offset += units_.back().bytes;
      largest = std::max(largest, units_.back().bytes);
    }
    staging_ = alloc.take<float>("nvme_staging");
    const auto address = reinterpret_cast<uintptr_t>(staging_.data());
    char* aligned = reinterpret_cast<char*>((address + nvme::kAlignment - 1) / nvme::kAlignment *
                                            nvme::kAlignment);
    for (size_t s = 0; s < slots_.size(); ++s) slots_[s].data = aligned + s * largest;
    int64_t largest_shard = 0, largest_grads = 0;
    for (const UnitInFile& unit : units_) {
      largest_shard = std::max(largest_shard, shard_bytes(unit));
      largest_grads = std::max(largest_grads, unit.grad_bytes);
    }
    // After the slots: the gathers' two buffers (with the parameters here), the gradients' two.
    char* past_slots = aligned + slots_.size() * largest;
    char* grads = past_slots + (contents_.params ? 2 * largest_shard : 0);
    for (int b = 0; b < 2; ++b) {
      shard_data_[b] = past_slots + b * largest_shard;
      grad_buffers_[b].data = grads + b * largest_grads;
    }
    Communicator& world = engine.comms().world();
    rank_ = world.rank();
    std::string error, fallback;
    try {
      file_ = std::make_unique<nvme::SwapFile>(
          settings.dir, fmt::format("rank {}'s {}", world.rank(), held(false)), offset);
      io_ = nvme::make_async_io(settings.engine, 2 * settings.buffers, &fallback);
    } catch (const Error& e) {
      error = fmt::format("{}: zero.nvme_dir = \"{}\": {}", settings.where, settings.dir, e.what());
    }
    agree_or_fail(world.watchdog(), world.mpi_comm(), error, "making the NVMe swap files");
    log_root("NVMe: {} in {}, {:.1f} MiB per rank, through {}{}{}\n", held(true), settings.dir,
             static_cast<double>(file_->bytes()) / (1 << 20), io_->name(),
             file_->direct() ? " with O_DIRECT" : " through the page cache (O_DIRECT refused)",
             fallback.empty() ? "" : " (io_uring refused: " + fallback + ")");
  }

  void begin(int64_t step) override {
    step_ = step;
    drain();
    // The optimizer writes the file: a read ahead of the next step's first gather would be stale.
    discard_shard_read();
    gathers_.swap(last_gathers_);
    gathers_.clear();
    reading_ahead_ = true;
    for (Slot& slot : slots_) slot.unit = -1;  // read anew: copy_state may have written the file
  }

  HostUnitState fetch(int u) override {
    Slot& slot = slot_of(u);
    if (slot.unit != u) read(u);
    finish(slot.read);
    // Beside unit u's update: the next units, as many as the slots allow (unit u's and unit
    // u - 1's, whose write may be in flight, taken), at least the next.
    const int ahead = std::max(1, static_cast<int>(slots_.size()) - 2);
    for (int v = u + 1; v <= u + ahead && v < static_cast<int>(units_.size()); ++v)
      if (slot_of(v).unit != v) read(v);
    const UnitInFile& unit = units_[u];
    const int64_t floats = unit.array_bytes / static_cast<int64_t>(sizeof(float));
    float* master = reinterpret_cast<float*>(slot.data + unit.grad_bytes);
    void* params = contents_.param_bytes > 0
                       ? slot.data + unit.grad_bytes + kStateArrays * unit.array_bytes
                       : nullptr;
    return {master, master + floats, master + 2 * floats, params,
            unit.grad_bytes > 0 ? slot.data : nullptr};
  }

  // Backward's reduced sum of unit u: a gradient buffer, the other's unit written meanwhile.
  void* gradients(int u, bool read) override {
    GradBuffer& buffer = grad_buffers_[u % 2];
    finish(buffer.write);
    if (read) {
      InFlight array = submit(request(nvme::IoOp::Read, u, buffer.data, true), u, step_ + 1);
      finish(array);
    }
    return buffer.data;
  }
  void gradients_written(int u) override {
    GradBuffer& buffer = grad_buffers_[u % 2];
    buffer.write = submit(request(nvme::IoOp::Write, u, buffer.data, true), u, step_ + 1);
  }

  // A gather's read of the unit's parameter shard: the parameter array, or the master that is
  // the parameters, after the optimizer step's last writes (the file is the truth). Then the
  // read of the gather that came next in the step before.
  const void* fetch_shard(int u) override {
    const size_t gather = gathers_.size();
    gathers_.push_back(u);
    int buffer = 0;
    if (ahead_.unit == u) {
      buffer = ahead_.buffer;
      finish(ahead_.read);
      ahead_.unit = -1;
    } else {
      drain();
      discard_shard_read();
      reading_ahead_ = reading_ahead_ && gather == 0;  // the order changed this step
      InFlight read = submit(shard_request(u, shard_data_[buffer]), u);
      finish(read);
    }
    if (reading_ahead_ && gather + 1 < last_gathers_.size() && last_gathers_[gather] == u) {
      const int next = last_gathers_[gather + 1];
      ahead_ = {next, 1 - buffer, submit(shard_request(next, shard_data_[1 - buffer]), next)};
    }
    return shard_data_[buffer];
  }

  // The state back to the file; the gradients it was read with stay there until backward's next.
  void updated(int u) override {
    Slot& slot = slot_of(u);
    nvme::IoRequest state = request(nvme::IoOp::Write, u, slot.data);
    state.buffer = slot.data + units_[u].grad_bytes;
    state.bytes -= units_[u].grad_bytes;
    state.offset += units_[u].grad_bytes;
    slot.write = submit(state, u);
  }

  // Through a buffer of its own, synchronously (checkpoints and the initial master). A master
  // written rounds the compute parameters the file holds beside it (bf16), as the core rounds
  // them on the device (ZeroEngineT::masters_written).
  void copy_state(int state, int u, int64_t e, int64_t n, float* host, bool to_host) override {
    drain();
    discard_shard_read();
    reading_ahead_ = false;  // the file changes outside a step: the next step reads anew
    for (Slot& slot : slots_) slot.unit = -1;
    const UnitInFile& unit = units_[u];
    nvme::AlignedBuffer array(unit.array_bytes);
    nvme::IoRequest one{nvme::IoOp::Read,
                        file_.get(),
                        array.data(),
                        unit.array_bytes,
                        unit.offset + unit.grad_bytes + state * unit.array_bytes,
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
    if (state == 0 && contents_.param_bytes > 0) round_params(u, e, n, host);
  }

 private:
  struct UnitInFile {
    int64_t offset;       // of its master array; Adam m and v follow, then its parameters
    int64_t array_bytes;  // of each state array
    int64_t bytes;        // of its part of the file
    int64_t first;        // the unit's element at the arrays' start (the piece's first)
    int64_t count;        // the piece's elements
    int64_t grad_bytes;   // of its gradient array, first in its part (0: none in the file)
  };
  // A transfer in flight: its requests' tickets (none: nothing in flight), and what the trace
  // shows of it.
  struct InFlight {
    std::vector<int64_t> tickets;
    double issued = 0;  // wall_seconds() at the submit
    bool read = true;
    int unit = -1;
    int64_t bytes = 0;
  };
  struct Slot {
    char* data = nullptr;
    int unit = -1;  // whose state it holds or receives
    InFlight read, write;
  };

  // What the file holds, e.g. "optimizer state, parameter shard and gradient shard" (`the`: each
  // with "the ").
  std::string held(bool the) const {
    std::vector<std::string> parts = {"optimizer state"};
    if (contents_.params) parts.emplace_back("parameter shard");
    if (contents_.grad_bytes > 0) parts.emplace_back("gradient shard");
    std::string text;
    for (size_t i = 0; i < parts.size(); ++i)
      text += (i == 0                  ? ""
               : i + 1 == parts.size() ? " and "
                                       : ", ") +
              std::string(the ? "the " : "") + parts[i];
    return text;
  }
  int64_t shard_bytes(const UnitInFile& unit) const {
    return nvme::shard_read_bytes(unit.count * contents_.optim_pieces, contents_);
  }
  nvme::IoRequest shard_request(int u, char* data) const {
    const UnitInFile& unit = units_[u];
    const int64_t at =
        unit.grad_bytes + (contents_.param_bytes > 0 ? kStateArrays * unit.array_bytes : 0);
    return {nvme::IoOp::Read,  file_.get(),      data,
            shard_bytes(unit), unit.offset + at, fmt::format("unit {}'s parameter shard", u)};
  }
  // A shard read ahead and not taken: waited (its buffer is reused), dropped.
  void discard_shard_read() {
    finish(ahead_.read);
    ahead_.unit = -1;
  }
  // Unit u's part of the file, or its gradient array alone (at the part's start).
  nvme::IoRequest request(nvme::IoOp op, int u, char* data, bool gradients = false) const {
    const UnitInFile& unit = units_[u];
    return {op,
            file_.get(),
            data,
            gradients ? unit.grad_bytes : unit.bytes,
            unit.offset,
            fmt::format("unit {}'s {}", u, gradients ? "gradient shard" : "optimizer state")};
  }
  // Elements [e, e + n) of unit u's compute parameters: the rounding of the master `host`.
  void round_params(int u, int64_t e, int64_t n, const float* host) {
#if ZEROMINI_HAVE_BF16
    ZM_ASSERT(contents_.param_bytes == static_cast<int>(sizeof(bf16)), "{}-byte parameters",
              contents_.param_bytes);
    const UnitInFile& unit = units_[u];
    const int64_t bytes = nvme::param_array_bytes(unit.count * contents_.optim_pieces, contents_);
    nvme::AlignedBuffer array(bytes);
    nvme::IoRequest one{nvme::IoOp::Read,
                        file_.get(),
                        array.data(),
                        bytes,
                        unit.offset + unit.grad_bytes + kStateArrays * unit.array_bytes,
                        fmt::format("unit {}'s parameters", u)};
    io_->wait(io_->submit(one));
    bf16* params = static_cast<bf16*>(array.data()) + (e - unit.first);
    for (int64_t i = 0; i < n; ++i) params[i] = bf16(host[i]);
    one.op = nvme::IoOp::Write;
    io_->wait(io_->submit(one));
#else
    (void)u, (void)e, (void)n, (void)host;
    ZM_ASSERT(false, "bf16 parameters in a build without bf16");
#endif
  }
  Slot& slot_of(int u) {
    return slots_[static_cast<size_t>(u) % slots_.size()];
  }
  void read(int u) {
    Slot& slot = slot_of(u);
    finish(slot.write);  // the unit it held is in the file
    finish(slot.read);
    slot.unit = u;
    slot.read = submit(request(nvme::IoOp::Read, u, slot.data), u);
  }
  // A step's transfer of unit u, in requests of at most zero.nvme_block_kib (all of it in one
  // where 0), each counted for the run's figures.
  // `step`: the step it belongs to, for the fault point (the optimizer step under way, or for
  // backward's gradients the one after the last: a resumed run's first backward counts as 1).
  InFlight submit(const nvme::IoRequest& whole, int u, int64_t step = -1) {
    InFlight transfer{{}, wall_seconds(), whole.op == nvme::IoOp::Read, u, whole.bytes};
    for (int64_t done = 0; done < whole.bytes;) {
      const int64_t bytes =
          block_bytes_ > 0 ? std::min(block_bytes_, whole.bytes - done) : whole.bytes;
      nvme::IoRequest request = whole;
      request.buffer = static_cast<char*>(whole.buffer) + done;
      request.bytes = bytes;
      request.offset = whole.offset + done;
      done += bytes;
      fault_point("nvme.transfer", rank_, step < 0 ? step_ : step, &request);
      nvme::IoTotals& totals = nvme::this_rank_io();
      ++(transfer.read ? totals.reads : totals.writes);
      (transfer.read ? totals.bytes_read : totals.bytes_written) += request.bytes;
      transfer.tickets.push_back(io_->submit(std::move(request)));
    }
    return transfer;
  }
  // Waits for the transfer, counting the wait; a span from its submit to now where the run traces.
  void finish(InFlight& transfer) {
    if (transfer.tickets.empty()) return;
    const std::vector<int64_t> waited = std::move(transfer.tickets);
    transfer.tickets.clear();
    const double start = wall_seconds();
    try {
      for (const int64_t ticket : waited) io_->wait(ticket);
    } catch (const Error& error) {
      // Only this rank knows, and the others wait in the step's collectives: the job ends, with
      // the status of a failed write; the last checkpoint holds the state.
      abort_job(fmt::format("zeromini: rank {}: I/O error: {}", rank_, error.what()).c_str(),
                kExitIoError);
    }
    const double done = wall_seconds();
    nvme::this_rank_io().seconds_waited += done - start;
    SpanObserver* spans = nvme_span_observer();
    if (spans && spans->observing())
      spans->host_span(
          SpanKind::Storage,
          fmt::format("nvme {} {} B", transfer.read ? "read" : "write", transfer.bytes),
          transfer.unit, transfer.issued, done);
  }
  void drain() {
    for (Slot& slot : slots_) {
      finish(slot.read);
      finish(slot.write);
    }
    for (GradBuffer& buffer : grad_buffers_) finish(buffer.write);
  }

  nvme::FileContents contents_;
  char* shard_data_[2] = {nullptr, nullptr};  // a gather's shard, and the next one's read ahead
  struct ShardRead {
    int unit = -1;  // read ahead into shard_data_[buffer] (-1: none)
    int buffer = 0;
    InFlight read;
  } ahead_;
  std::vector<int> gathers_, last_gathers_;  // the units fetched this step and in the one before
  bool reading_ahead_ = false;               // the gathers so far follow the step before's
  int rank_ = 0;                             // in the world
  int64_t step_ = 0;                         // the optimizer step under way (1-based)
  std::vector<UnitInFile> units_;
  TrackedBuffer<float> staging_;
  std::vector<Slot> slots_;  // zero.nvme_buffers
  struct GradBuffer {
    char* data = nullptr;
    InFlight write;
  } grad_buffers_[2];    // backward's gradient arrays (zero.nvme_gradients)
  int64_t block_bytes_;  // zero.nvme_block_kib, in bytes (0: a transfer in one request)
  std::unique_ptr<nvme::SwapFile> file_;
  // Last: destroyed first, waiting for its transfers while the file and the staging still exist.
  std::unique_ptr<nvme::AsyncIo> io_;
};

}  // namespace

void register_module_zero_infinity_with_offload() {
  HostStoreKind kind;
  kind.value = "nvme";
  kind.holds_params = true;
  kind.holds_gradients = [](const Deck& deck) { return nvme_settings(deck).gradients; };
  kind.check = check_nvme_settings;
  kind.buffers = [](const Deck& deck) -> StoreBuffers {
    const int buffers = nvme_settings(deck).buffers;
    return [buffers](const StageSpec& spec, const ScheduleContext& context) {
      return staging_buffers(spec, context, buffers);
    };
  };
  kind.maker = [](const Deck& deck) -> HostStoreMaker {
    const NvmeSettings settings = nvme_settings(deck);
    return [settings](const ZeroEngine& engine, PlannedAllocator& alloc) {
      return std::make_shared<NvmeStore>(engine, alloc, settings);
    };
  };
  add_host_store(std::move(kind));
  register_nvme_plan();
}

}  // namespace zm
