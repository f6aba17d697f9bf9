#include "modules/offload/host_transfer.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstring>

#include "core/compat.hpp"
#include "core/error.hpp"
#include "core/spans.hpp"
#include "core/timer.hpp"

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

namespace zm {

namespace {

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

#if defined(KOKKOS_ENABLE_CUDA)
void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess) fail("{}: {}", what, cudaGetErrorString(status));
}
#endif

}  // namespace

const char* transfer_direction_name(TransferDirection direction) {
  switch (direction) {
    case TransferDirection::ToHost:
      return "device_to_host";
    case TransferDirection::ToDevice:
      return "host_to_device";
    case TransferDirection::Count:
      break;
  }
  return "?";
}

TransferOpStats TransferStats::total() const {
  TransferOpStats sum;
  for (const TransferOpStats& d : directions) {
    sum.calls += d.calls;
    sum.bytes += d.bytes;
    sum.seconds += d.seconds;
  }
  return sum;
}

TransferStats transfers_between(const TransferStats& before, const TransferStats& after) {
  TransferStats out;
  for (size_t d = 0; d < out.directions.size(); ++d) {
    out.directions[d].calls = after.directions[d].calls - before.directions[d].calls;
    out.directions[d].bytes = after.directions[d].bytes - before.directions[d].bytes;
    out.directions[d].seconds = after.directions[d].seconds - before.directions[d].seconds;
  }
  return out;
}

// The copy stream: CUDA's own, created once; none on the host.
struct HostTransfers::Stream {
#if defined(KOKKOS_ENABLE_CUDA)
  cudaStream_t stream = nullptr;
  cudaEvent_t compute_done = nullptr;  // where the compute stream stood when a copy was queued
  Stream() {
    check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "transfer stream");
    check_cuda(cudaEventCreateWithFlags(&compute_done, cudaEventDisableTiming), "transfer event");
  }
  ~Stream() {
    if (compute_done) cudaEventDestroy(compute_done);
    if (stream) cudaStreamDestroy(stream);
  }
#endif
};

HostTransfers::HostTransfers(SpanObserver* spans)
    : stream_(std::make_unique<Stream>()), spans_(spans) {}

HostTransfers::~HostTransfers() = default;

void HostTransfers::copy(TransferDirection direction, void* dst, const void* src, size_t bytes,
                         int unit) {
  if (bytes == 0) return;
  if (queued_count_ == static_cast<int>(queued_.size())) wait();
  const double begin = seconds_now();
  queued_[static_cast<size_t>(queued_count_++)] = {direction, static_cast<double>(bytes), unit,
                                                   wall_seconds()};
#if defined(KOKKOS_ENABLE_CUDA)
  // After what the compute stream has queued (the gradients' last writes, which wait for the
  // collectives that made them; the last reads of a slot): the copy stream waits for it on the
  // device, so the host goes on queueing work and the copy overlaps it.
  check_cuda(cudaEventRecord(stream_->compute_done, ExecSpace().cuda_stream()),
             "recording the compute stream for a copy");
  check_cuda(cudaStreamWaitEvent(stream_->stream, stream_->compute_done, 0),
             "ordering a copy after the compute stream");
  check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_->stream),
             "host-device copy");
#else
  ExecSpace().fence();
  std::memcpy(dst, src, bytes);
#endif
  TransferOpStats& s = stats_[direction];
  s.calls += 1;
  s.bytes += static_cast<double>(bytes);
  issue_seconds_ += seconds_now() - begin;
}

void HostTransfers::wait() {
  if (queued_count_ == 0) return;
  const double begin = seconds_now();
#if defined(KOKKOS_ENABLE_CUDA)
  check_cuda(cudaStreamSynchronize(stream_->stream), "waiting for host-device copies");
#endif
  const double waited = seconds_now() - begin + issue_seconds_;
  // The time is shared among the queued copies by their bytes.
  double queued_bytes = 0.0;
  for (int i = 0; i < queued_count_; ++i) queued_bytes += queued_[static_cast<size_t>(i)].bytes;
  const double done = wall_seconds();
  for (int i = 0; i < queued_count_; ++i) {
    const Queued& q = queued_[static_cast<size_t>(i)];
    stats_[q.direction].seconds += waited * q.bytes / queued_bytes;
    if (spans_ && spans_->observing())
      spans_->host_span(
          SpanKind::Transfer,
          fmt::format("{} {:.0f} B", q.direction == TransferDirection::ToHost ? "d2h" : "h2d",
                      q.bytes),
          q.unit, q.issued, done);
  }
  queued_count_ = 0;
  issue_seconds_ = 0.0;
}

HostTransfers& this_rank_copies() {
  static HostTransfers* copies = new HostTransfers();
  return *copies;
}

}  // namespace zm
