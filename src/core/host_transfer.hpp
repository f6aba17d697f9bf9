// Copies between device memory and host memory (model state kept in host memory: the reduced
// gradient shard to the host, the updated parameters and the staged parameter shard back),
// counted per direction as the collectives are per kind, and shown on the trace's transfer track.
//
// In CUDA builds the copies run on a stream of their own, ordered after the work queued on the
// compute stream (by an event the copy stream waits for on the device), so that a copy in flight
// holds up neither the kernels queued after it nor the host; wait() blocks until every queued
// copy is done, and whatever reads or reuses a copy's memory waits first. Host builds copy at
// once. The bytes of
// every copy come from the step's schedule (zero/schedule.hpp), whose planned transfers the
// planner prices: planned == measured for these bytes too.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/trace_clock.hpp"

namespace zm {

class Tracer;

enum class TransferDirection : int { ToHost = 0, ToDevice, Count };
constexpr int kTransferDirections = static_cast<int>(TransferDirection::Count);
// "device_to_host" | "host_to_device": the names in results.h5, summary.json and the trace.
const char* transfer_direction_name(TransferDirection direction);

struct TransferOpStats {
  uint64_t calls = 0;
  double bytes = 0.0;
  double seconds = 0.0;  // the host's time issuing the copies and waiting for them
};

struct TransferStats {
  std::array<TransferOpStats, kTransferDirections> directions{};
  const TransferOpStats& operator[](TransferDirection d) const {
    return directions[static_cast<size_t>(d)];
  }
  TransferOpStats& operator[](TransferDirection d) { return directions[static_cast<size_t>(d)]; }
  TransferOpStats total() const;
};
// What was counted between two readings of the same counters.
TransferStats transfers_between(const TransferStats& before, const TransferStats& after);

class HostTransfers {
 public:
  // `tracer`: where traced steps record each copy (null: nowhere).
  explicit HostTransfers(Tracer* tracer = nullptr);
  ~HostTransfers();
  HostTransfers(const HostTransfers&) = delete;
  HostTransfers& operator=(const HostTransfers&) = delete;

  // Queues the copy of `bytes` from src to dst in `direction`, after the device work queued so
  // far. `unit`: the model unit it moves, for the trace (-1: none).
  void copy(TransferDirection direction, void* dst, const void* src, size_t bytes, int unit = -1);
  // Blocks until every queued copy is done.
  void wait();
  // Where traced steps record each copy (null: nowhere).
  void trace_to(Tracer* tracer) { tracer_ = tracer; }
  // Every copy so far on this rank.
  const TransferStats& stats() const { return stats_; }

 private:
  struct Stream;
  struct Queued {
    TransferDirection direction;
    double bytes;
    int unit;
    Stamp issued;
  };
  std::unique_ptr<Stream> stream_;
  Tracer* tracer_;
  TransferStats stats_;
  std::array<Queued, 4> queued_{};  // the copies since the last wait, for their time and trace
  int queued_count_ = 0;
  double issue_seconds_ = 0.0;  // of the queued copies
};

}  // namespace zm
