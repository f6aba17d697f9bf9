// Copies between device memory and host memory (model state kept in host memory: the reduced
// gradient shard to the host, the updated parameters and the staged parameter shard back),
// counted per direction as the collectives are per kind, and reported as spans (core/spans.hpp)
// to whoever observes them. A rank has one copy stream (this_rank_copies), which every engine
// of the process posts on and the module's step figures read (transfer_figures.hpp).
//
// In CUDA builds the copies run on a stream of their own, ordered after the work queued on the
// compute stream (by an event the copy stream waits for on the device), so that a copy in flight
// holds up neither the kernels queued after it nor the host; wait() blocks until every queued
// copy is done, and whatever reads or reuses a copy's memory waits first. Host builds copy at
// once. The bytes of
// every copy come from the tier's copy list (host_copies.hpp), which the planner prices too:
// planned == measured for these bytes too.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace zm {

class SpanObserver;

enum class TransferDirection : int { ToHost = 0, ToDevice, Count };
constexpr int kTransferDirections = static_cast<int>(TransferDirection::Count);
// "device_to_host" | "host_to_device": the names in results.h5 and summary.json.
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
  // `spans`: told of each copy as a span (null: nobody).
  explicit HostTransfers(SpanObserver* spans = nullptr);
  ~HostTransfers();
  HostTransfers(const HostTransfers&) = delete;
  HostTransfers& operator=(const HostTransfers&) = delete;

  // Queues the copy of `bytes` from src to dst in `direction`, after the device work queued so
  // far. `unit`: the model unit it moves, for its span (-1: none).
  void copy(TransferDirection direction, void* dst, const void* src, size_t bytes, int unit = -1);
  // Blocks until every queued copy is done.
  void wait();
  // Who is told of each copy as a span (null: nobody).
  void report_spans_to(SpanObserver* spans) { spans_ = spans; }
  // Every copy so far on this rank.
  const TransferStats& stats() const { return stats_; }

 private:
  struct Stream;
  struct Queued {
    TransferDirection direction;
    double bytes;
    int unit;
    double issued;  // seconds (core/timer.hpp)
  };
  std::unique_ptr<Stream> stream_;
  SpanObserver* spans_;
  TransferStats stats_;
  std::array<Queued, 4> queued_{};  // the copies since the last wait, for their time and span
  int queued_count_ = 0;
  double issue_seconds_ = 0.0;  // of the queued copies
};

// This rank's copies: one stream per process, created on first use and kept to the end (a CUDA
// stream outlives the engines that post on it; destroying it at exit would race the driver's
// own teardown).
HostTransfers& this_rank_copies();

}  // namespace zm
