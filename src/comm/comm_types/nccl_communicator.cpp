#include "comm/comm_types/nccl_communicator.hpp"

#include <fmt/format.h>

#include "comm/watchdog.hpp"
#include "comm/watched_mpi.hpp"
#include "core/abort_job.hpp"
#include "core/compat.hpp"
#include "core/timer.hpp"

namespace zm {

namespace {

[[noreturn]] void nccl_failure(const char* what, const char* detail, size_t count, DType type,
                               int rank) {
  const std::string message =
      fmt::format("zeromini: rank {}: NCCL error in {} of {} {} elements: {}", rank, what, count,
                  dtype_name(type), detail);
  abort_job(message.c_str(), 1);
}

void check_cuda(cudaError_t status, const char* what, int rank) {
  if (status != cudaSuccess) nccl_failure(what, cudaGetErrorString(status), 0, DType::F32, rank);
}

ncclDataType_t nccl_type(DType type) {
  switch (type) {
    case DType::F32:
      return ncclFloat;
    case DType::BF16:
      return ncclBfloat16;
    case DType::U8:
      return ncclUint8;
  }
  return ncclFloat;
}

class NcclPendingOp : public detail::PendingOp {
 public:
  NcclPendingOp(cudaEvent_t done, cudaStream_t compute, int rank)
      : done_(done), compute_(compute), rank_(rank) {}
  ~NcclPendingOp() override {
    if (done_) {
      cudaStreamWaitEvent(compute_, done_, 0);
      cudaEventDestroy(done_);
    }
  }
  bool test() override {
    if (!done_) return true;
    const cudaError_t status = cudaEventQuery(done_);
    if (status == cudaErrorNotReady) return false;
    check_cuda(status, "cudaEventQuery", rank_);
    release();
    return true;
  }
  bool stream_ordered() const override { return true; }
  // Stream-ordered: work queued on the default stream from now on sees the result.
  void wait() override {
    if (!done_) return;
    check_cuda(cudaStreamWaitEvent(compute_, done_, 0), "cudaStreamWaitEvent", rank_);
    release();
  }

 private:
  void release() {
    cudaEventDestroy(done_);
    done_ = nullptr;
  }
  cudaEvent_t done_;
  cudaStream_t compute_;
  int rank_;
};

// The monitor's device side, on the watchdog's thread (which first sets this rank's GPU).
class NcclDeviceOps : public DeviceOpMonitor::Device {
 public:
  NcclDeviceOps(ncclComm_t comm, int device) : comm_(comm), device_(device) {}
  bool complete(void* done) override {
    cudaSetDevice(device_);
    // An error other than "not ready" is the device's, reported by the next CUDA call.
    return cudaEventQuery(static_cast<cudaEvent_t>(done)) != cudaErrorNotReady;
  }
  void release(void* done) override { cudaEventDestroy(static_cast<cudaEvent_t>(done)); }
  std::string async_error() override {
    ncclResult_t state = ncclSuccess;
    if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess) return "ncclCommGetAsyncError failed";
    if (state == ncclSuccess || state == ncclInProgress) return "";
    return fmt::format("{} ({})", ncclGetErrorString(state), ncclGetLastError(comm_));
  }
  void abort() override { ncclCommAbort(comm_); }

 private:
  ncclComm_t comm_;
  int device_;
};

}  // namespace

NcclCommunicator::NcclCommunicator(MPI_Comm comm, Watchdog& watchdog) : Communicator(watchdog) {
  MPI_Comm_dup(comm, &mpi_comm_);
  MPI_Comm_rank(mpi_comm_, &rank_);
  MPI_Comm_size(mpi_comm_, &size_);
  ncclUniqueId id;
  if (rank_ == 0) {
    const ncclResult_t result = ncclGetUniqueId(&id);
    if (result != ncclSuccess)
      nccl_failure("ncclGetUniqueId", ncclGetErrorString(result), 0, DType::F32, rank_);
  }
  watched_bcast(watchdog, &id, sizeof(id), MPI_BYTE, 0, mpi_comm_, "the NCCL unique id");
  {
    // Every rank of the communicator must arrive: one that does not leaves the others here.
    BlockingRegion region(watchdog, "NCCL communicator initialisation (ncclCommInitRank)",
                          kLocalRegion, WaitKind::Blocking);
    const ncclResult_t result = ncclCommInitRank(&comm_, size_, id, rank_);
    if (result != ncclSuccess)
      nccl_failure("ncclCommInitRank", ncclGetErrorString(result), 0, DType::F32, rank_);
  }
  check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate", rank_);
  check_cuda(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming), "cudaEventCreate", rank_);
  compute_stream_ = ExecSpace().cuda_stream();
  int device = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice", rank_);
  device_ops_ = std::make_unique<NcclDeviceOps>(comm_, device);
  monitor_ = std::make_unique<DeviceOpMonitor>(*device_ops_, rank_, "NCCL", wall_seconds);
  monitor_->set_timeout(watchdog.timeout());
  watch_id_ = watchdog.watch_device([this] { return monitor_->poll(); });
}

NcclCommunicator::~NcclCommunicator() {
  watchdog().unwatch_device(watch_id_);
  const bool aborted = monitor_->aborted();
  monitor_.reset();
  if (stream_ && !aborted) cudaStreamSynchronize(stream_);
  if (comm_ && !aborted) ncclCommDestroy(comm_);
  if (ready_) cudaEventDestroy(ready_);
  if (stream_) cudaStreamDestroy(stream_);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && mpi_comm_ != MPI_COMM_NULL) MPI_Comm_free(&mpi_comm_);
}

// Enqueues a collective on the communication stream, after the default stream's queued work.
std::unique_ptr<detail::PendingOp> NcclCommunicator::post(
    const char* op, size_t count, DType type, const std::function<ncclResult_t()>& enqueue) {
  check_cuda(cudaEventRecord(ready_, compute_stream_), "cudaEventRecord", rank_);
  check_cuda(cudaStreamWaitEvent(stream_, ready_, 0), "cudaStreamWaitEvent", rank_);
  // The collective starts when the communication stream reaches it (marked where observed).
  const StreamMark posted = mark_stream(stream_);
  const ncclResult_t result = enqueue();
  if (result != ncclSuccess) nccl_failure(op, ncclGetErrorString(result), count, type, rank_);
  // A second event for the monitor: the pending op's is gone once a wait has queued on it.
  cudaEvent_t done = nullptr, watched = nullptr;
  for (cudaEvent_t* event : {&done, &watched}) {
    check_cuda(cudaEventCreateWithFlags(event, cudaEventDisableTiming), "cudaEventCreate", rank_);
    check_cuda(cudaEventRecord(*event, stream_), "cudaEventRecord", rank_);
  }
  monitor_->posted(op, count, dtype_size(type), watched);
  auto pending = std::make_unique<NcclPendingOp>(done, compute_stream_, rank_);
  pending->device_posted = posted;
  pending->device_completed = mark_stream(stream_);
  return pending;
}

std::unique_ptr<detail::PendingOp> NcclCommunicator::post_all_reduce(void* data, size_t count,
                                                                     DType type) {
  return post("all_reduce", count, type, [&] {
    return ncclAllReduce(data, data, count, nccl_type(type), ncclSum, comm_, stream_);
  });
}

std::unique_ptr<detail::PendingOp> NcclCommunicator::post_reduce_scatter(const void* send,
                                                                         void* recv,
                                                                         size_t recv_count,
                                                                         DType type) {
  return post("reduce_scatter", recv_count, type, [&] {
    return ncclReduceScatter(send, recv, recv_count, nccl_type(type), ncclSum, comm_, stream_);
  });
}

std::unique_ptr<detail::PendingOp> NcclCommunicator::post_all_gather(const void* send, void* recv,
                                                                     size_t send_count,
                                                                     DType type) {
  return post("all_gather", send_count, type, [&] {
    return ncclAllGather(send, recv, send_count, nccl_type(type), comm_, stream_);
  });
}

std::unique_ptr<detail::PendingOp> NcclCommunicator::post_broadcast(void* data, size_t count,
                                                                    DType type, int root) {
  return post("broadcast", count, type, [&] {
    return ncclBroadcast(data, data, count, nccl_type(type), root, comm_, stream_);
  });
}

std::unique_ptr<detail::PendingOp> NcclCommunicator::post_all_to_all(const void* send, void* recv,
                                                                     size_t block_count,
                                                                     DType type) {
  const size_t block_bytes = block_count * dtype_size(type);
  const auto* from = static_cast<const char*>(send);
  auto* to = static_cast<char*>(recv);
  return post("all_to_all", block_count, type, [&] {
    // One group posts every peer's send and receive together, so that no pair waits on another.
    ncclResult_t result = ncclGroupStart();
    for (int peer = 0; peer < size_ && result == ncclSuccess; ++peer) {
      const size_t offset = static_cast<size_t>(peer) * block_bytes;
      result = ncclSend(from + offset, block_count, nccl_type(type), peer, comm_, stream_);
      if (result == ncclSuccess)
        result = ncclRecv(to + offset, block_count, nccl_type(type), peer, comm_, stream_);
    }
    const ncclResult_t ended = ncclGroupEnd();
    return result != ncclSuccess ? result : ended;
  });
}

void NcclCommunicator::do_barrier() {
  Kokkos::fence();
  check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize", rank_);
  MPI_Barrier(mpi_comm_);
}

}  // namespace zm
