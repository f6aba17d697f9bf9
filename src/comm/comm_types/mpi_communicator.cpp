#include "comm/comm_types/mpi_communicator.hpp"

#include <fmt/format.h>

#include <sched.h>
#include <unistd.h>

#include <climits>
#include <csignal>
#include <cstring>
#include <functional>

#include "core/abort_job.hpp"
#include "core/error.hpp"

#if defined(OPEN_MPI) || defined(MPICH)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif

namespace zm {

namespace {

// Ends the job with a message that names the operation, its size and the rank: an MPI error is
// not something a rank can recover from, and returning would leave the others waiting.
[[noreturn]] void mpi_failure(int code, const char* op, size_t count, DType type, int rank) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, text, &length);
  const std::string message =
      fmt::format("zeromini: rank {}: MPI error in {} of {} {} elements: {}", rank, op, count,
                  dtype_name(type), std::string(text, static_cast<size_t>(length)));
  abort_job(message.c_str(), 1);
}

int checked_count(size_t count, const char* op, DType type, int rank) {
  if (count > static_cast<size_t>(INT_MAX)) {
    const std::string message = fmt::format(
        "zeromini: rank {}: {} of {} {} elements exceeds MPI's int count limit ({}); use more "
        "ranks or smaller units",
        rank, op, count, dtype_name(type), INT_MAX);
    abort_job(message.c_str(), 1);
  }
  return static_cast<int>(count);
}

#if ZEROMINI_HAVE_BF16
void bf16_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const bf16*>(in);
  auto* b = static_cast<bf16*>(inout);
  for (int i = 0; i < *len; ++i)
    b[i] = static_cast<bf16>(static_cast<float>(a[i]) + static_cast<float>(b[i]));
}
#endif

// Host staging of device buffers: page-locked memory where the device is a CUDA GPU, so that the
// copies run at full bandwidth.
#if defined(KOKKOS_ENABLE_CUDA)
using StagingSpace = Kokkos::CudaHostPinnedSpace;
#else
using StagingSpace = Kokkos::HostSpace;
#endif
using HostBytes = Kokkos::View<char*, StagingSpace>;
using DeviceBytes = Kokkos::View<char*, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
using ConstDeviceBytes =
    Kokkos::View<const char*, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

// One posted MPI request, and what to do when it completes (copy staged data back to the
// device, move an in-place reduce-scatter result to its slot).
class MpiPendingOp : public detail::PendingOp {
 public:
  MpiPendingOp(MPI_Request request, const char* op, size_t count, DType type, int rank,
               MpiCommunicator* owner, int64_t sequence)
      : request_(request),
        op_(op),
        count_(count),
        type_(type),
        rank_(rank),
        owner_(owner),
        sequence_(sequence) {}
  ~MpiPendingOp() override {
    if (request_ != MPI_REQUEST_NULL) wait();
  }

  bool test() override {
    if (request_ == MPI_REQUEST_NULL) return true;
    int done = 0;
    const int code = MPI_Test(&request_, &done, MPI_STATUS_IGNORE);
    if (code != MPI_SUCCESS) mpi_failure(code, op_, count_, type_, rank_);
    if (done) finish();
    return done != 0;
  }
  // Polls instead of MPI_Wait so that a wait can time out; yields the core now and then, which
  // matters when ranks outnumber cores.
  void wait() override {
    if (request_ == MPI_REQUEST_NULL) return;
    const double start = MPI_Wtime();
    for (uint64_t polls = 1;; ++polls) {
      int done = 0;
      const int code = MPI_Test(&request_, &done, MPI_STATUS_IGNORE);
      if (code != MPI_SUCCESS) mpi_failure(code, op_, count_, type_, rank_);
      if (done) break;
      if (polls % 1024 == 0) {
        sched_yield();
        const double waited = MPI_Wtime() - start;
        if (waited > owner_->timeout())
          owner_->report_timeout(op_, count_, type_, sequence_, waited);
      }
    }
    finish();
  }

  std::function<void()> on_complete;
  HostBytes staging_send, staging_recv;  // kept alive while MPI uses them

 private:
  void finish() {
    request_ = MPI_REQUEST_NULL;
    if (on_complete) on_complete();
    on_complete = nullptr;
  }
  MPI_Request request_;
  const char* op_;
  size_t count_;
  DType type_;
  int rank_;
  MpiCommunicator* owner_;
  int64_t sequence_;
};

// Last words when the watchdog's own diagnosis cannot complete (a peer that neither answers nor
// dies): printed from a signal handler with write(2), then the process ends.
char g_timeout_message[1024];
extern "C" void on_diagnosis_alarm(int) {
  const ssize_t ignored =
      write(2, g_timeout_message, strnlen(g_timeout_message, sizeof(g_timeout_message)));
  (void)ignored;
  _exit(1);
}

// A buffer MPI works on in place: the device data itself, or a host copy that goes back to the
// device when the operation completes.
struct InPlaceBuffer {
  void* data = nullptr;
  HostBytes host;
  std::function<void()> on_complete;
};

InPlaceBuffer stage_in_place(void* data, size_t bytes, bool staging) {
  InPlaceBuffer buffer;
  buffer.data = data;
  if (!staging || bytes == 0) return buffer;
  buffer.host = HostBytes("mpi_staging", bytes);
  Kokkos::deep_copy(buffer.host, ConstDeviceBytes(static_cast<const char*>(data), bytes));
  buffer.data = buffer.host.data();
  HostBytes host = buffer.host;
  buffer.on_complete = [host, data, bytes] {
    Kokkos::deep_copy(DeviceBytes(static_cast<char*>(data), bytes), host);
  };
  return buffer;
}

}  // namespace

MpiDatatypes MpiCommunicator::types(DType type) const {
  return type == DType::F32 ? MpiDatatypes{MPI_FLOAT, MPI_SUM}
                            : MpiDatatypes{bf16_type_, bf16_sum_};
}

MpiCommunicator::MpiCommunicator(MPI_Comm comm) {
  MPI_Comm_dup(comm, &comm_);
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  // Device buffers go to MPI directly only when the library says it handles CUDA memory.
#if defined(KOKKOS_ENABLE_CUDA)
#if defined(MPIX_GPU_SUPPORT_CUDA)  // MPICH >= 4
  gpu_aware_ = MPIX_Query_cuda_support() == 1;
#elif defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT  // Open MPI
  gpu_aware_ = MPIX_Query_cuda_support() == 1;
#endif
#endif
  staging_ = !device_is_host() && !gpu_aware_;
  MPI_Type_contiguous(2, MPI_BYTE, &bf16_type_);
  MPI_Type_commit(&bf16_type_);
#if ZEROMINI_HAVE_BF16
  MPI_Op_create(&bf16_sum, 1, &bf16_sum_);
#endif
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (bf16_sum_ != MPI_OP_NULL) MPI_Op_free(&bf16_sum_);
  if (bf16_type_ != MPI_DATATYPE_NULL) MPI_Type_free(&bf16_type_);
  if (posted_window_ != MPI_WIN_NULL) {
    MPI_Win_unlock_all(posted_window_);
    MPI_Win_free(&posted_window_);
  }
  if (node_window_ != MPI_WIN_NULL) MPI_Win_free(&node_window_);
  if (node_comm_ != MPI_COMM_NULL) MPI_Comm_free(&node_comm_);
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void MpiCommunicator::set_timeout(double seconds) {
  timeout_ = seconds;
  if (posted_window_ == MPI_WIN_NULL) create_progress_windows();
}

// The windows cost a few collectives to create and free, so only communicators that run with a
// watchdog (a trainer's) have them; waits on others time out without naming the missing ranks.
void MpiCommunicator::create_progress_windows() {
  MPI_Win_allocate(sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, comm_, &posted_count_,
                   &posted_window_);
  *posted_count_ = posted_;
  MPI_Win_lock_all(0, posted_window_);
  MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node_comm_);
  int node_size = 1;
  MPI_Comm_size(node_comm_, &node_size);
  int64_t* node_slot = nullptr;
  MPI_Win_allocate_shared(sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, node_comm_, &node_slot,
                          &node_window_);
  node_count_ = node_slot;
  *node_count_ = posted_;
  peer_counts_.assign(static_cast<size_t>(size_), nullptr);
  MPI_Group world_group, node_group;
  MPI_Comm_group(comm_, &world_group);
  MPI_Comm_group(node_comm_, &node_group);
  for (int local = 0; local < node_size; ++local) {
    MPI_Aint bytes = 0;
    int unit = 0;
    int64_t* slot = nullptr;
    MPI_Win_shared_query(node_window_, local, &bytes, &unit, &slot);
    int global = 0;
    MPI_Group_translate_ranks(node_group, 1, &local, world_group, &global);
    if (global != MPI_UNDEFINED) peer_counts_[static_cast<size_t>(global)] = slot;
  }
  MPI_Group_free(&world_group);
  MPI_Group_free(&node_group);
  MPI_Barrier(comm_);
}

int64_t MpiCommunicator::next_sequence() {
  ++posted_;
  if (posted_window_ == MPI_WIN_NULL) return posted_;
  // Local stores into this rank's slots; MPI_Win_sync makes them visible to readers.
  *posted_count_ = posted_;
  MPI_Win_sync(posted_window_);
  *node_count_ = posted_;
  return posted_;
}

void MpiCommunicator::report_timeout(const char* op, size_t count, DType type, int64_t sequence,
                                     double waited) {
  if (posted_window_ == MPI_WIN_NULL) {
    const std::string message = fmt::format(
        "zeromini: rank {}: watchdog: {} of {} {} elements has waited {:.0f} s, more than the "
        "timeout of {} s; aborting the job.",
        rank_, op, count, dtype_name(type), waited, timeout_);
    abort_job(message.c_str(), 1);
  }
  // This node's ranks first, from shared memory: no help from them is needed.
  std::vector<int64_t> counts(static_cast<size_t>(size_), -1);
  std::string missing;
  int missing_count = 0;
  for (int r = 0; r < size_; ++r)
    if (peer_counts_[static_cast<size_t>(r)])
      counts[static_cast<size_t>(r)] = *peer_counts_[static_cast<size_t>(r)];
  for (int r = 0; r < size_; ++r)
    if (counts[static_cast<size_t>(r)] >= 0 && counts[static_cast<size_t>(r)] < sequence) {
      missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      ++missing_count;
    }
  std::snprintf(g_timeout_message, sizeof(g_timeout_message),
                "zeromini: rank %d: watchdog: %s of %zu %s elements (collective #%lld) has waited "
                "%.0f s, more than comm.timeout_s = %g; ranks on this node still missing: %s; "
                "ranks on other nodes could not be read. Aborting the job.\n",
                rank_, op, count, dtype_name(type), static_cast<long long>(sequence), waited,
                timeout_, missing.empty() ? "none" : missing.c_str());
  // Ranks on other nodes through RMA, guarded: a diagnosis that hangs would defeat the watchdog.
  std::signal(SIGALRM, on_diagnosis_alarm);
  alarm(10);
  for (int r = 0; r < size_; ++r)
    if (counts[static_cast<size_t>(r)] < 0)
      MPI_Get(&counts[static_cast<size_t>(r)], 1, MPI_INT64_T, r, 0, 1, MPI_INT64_T,
              posted_window_);
  MPI_Win_flush_all(posted_window_);
  alarm(0);
  for (int r = 0; r < size_; ++r)
    if (!peer_counts_[static_cast<size_t>(r)] && counts[static_cast<size_t>(r)] < sequence) {
      missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      ++missing_count;
    }
  const std::string message = fmt::format(
      "zeromini: rank {}: watchdog: {} of {} {} elements (collective #{} on this rank) has waited "
      "{:.0f} s, more than comm.timeout_s = {}; ranks still missing (have not posted it): {}. "
      "Aborting the job.",
      rank_, op, count, dtype_name(type), sequence, waited, timeout_,
      missing_count ? missing
                    : std::string("none (all posted; the network or a peer's progress "
                                  "is stuck)"));
  abort_job(message.c_str(), 1);
}

void MpiCommunicator::progress() {
  // Any call into the MPI library advances its outstanding non-blocking collectives.
  int flag = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_, &flag, MPI_STATUS_IGNORE);
}

std::unique_ptr<detail::PendingOp> MpiCommunicator::post_all_reduce(void* data, size_t count,
                                                                    DType type) {
  const char* op = "all_reduce";
  const int n = checked_count(count, op, type, rank_);
  Kokkos::fence();  // the kernels that produced the data are done
  InPlaceBuffer buffer = stage_in_place(data, count * dtype_size(type), staging_);
  MPI_Request request = MPI_REQUEST_NULL;
  const int64_t sequence = next_sequence();
  const int code = MPI_Iallreduce(MPI_IN_PLACE, buffer.data, n, types(type).type, types(type).sum,
                                  comm_, &request);
  if (code != MPI_SUCCESS) mpi_failure(code, op, count, type, rank_);
  auto pending = std::make_unique<MpiPendingOp>(request, op, count, type, rank_, this, sequence);
  pending->staging_recv = buffer.host;
  pending->on_complete = std::move(buffer.on_complete);
  return pending;
}

std::unique_ptr<detail::PendingOp> MpiCommunicator::post_reduce_scatter(const void* send,
                                                                        void* recv,
                                                                        size_t recv_count,
                                                                        DType type) {
  const char* op = "reduce_scatter";
  const int n = checked_count(recv_count, op, type, rank_);
  checked_count(recv_count * static_cast<size_t>(size_), op, type, rank_);
  const MPI_Datatype mpi_type = types(type).type;
  const MPI_Op sum = types(type).sum;
  const size_t shard_bytes = recv_count * dtype_size(type);
  const size_t total_bytes = shard_bytes * static_cast<size_t>(size_);
  const bool in_place = static_cast<const char*>(send) + static_cast<size_t>(rank_) * shard_bytes ==
                        static_cast<const char*>(recv);
  Kokkos::fence();
  HostBytes host_send, host_recv;
  const void* mpi_send = send;
  void* mpi_recv = recv;
  std::function<void()> on_complete;
  if (in_place) {
    // MPI's in-place reduce-scatter reads the whole input from the receive buffer and leaves
    // the result at its start; the caller's convention wants it at this rank's slot, so the
    // result is moved there on completion (the rest of the buffer is scratch afterwards).
    char* base = static_cast<char*>(const_cast<void*>(send));
    mpi_send = MPI_IN_PLACE;
    mpi_recv = base;
    if (staging_ && total_bytes > 0) {
      host_recv = HostBytes("mpi_staging", total_bytes);
      Kokkos::deep_copy(host_recv, ConstDeviceBytes(base, total_bytes));
      mpi_recv = host_recv.data();
    }
    const size_t offset = static_cast<size_t>(rank_) * shard_bytes;
    HostBytes staged = host_recv;
    const bool staged_copy = staging_ && total_bytes > 0;
    on_complete = [base, offset, shard_bytes, staged, staged_copy] {
      if (staged_copy) {
        Kokkos::deep_copy(DeviceBytes(base + offset, shard_bytes),
                          Kokkos::subview(staged, std::make_pair(size_t(0), shard_bytes)));
      } else if (offset > 0) {
        if (device_is_host()) {
          std::memmove(base + offset, base, shard_bytes);
        } else {
          // Device memory without staging (GPU-aware MPI): copy through a temporary.
          Kokkos::View<char*, MemSpace> tmp("mpi_rs_tmp", shard_bytes);
          Kokkos::deep_copy(tmp, ConstDeviceBytes(base, shard_bytes));
          Kokkos::deep_copy(DeviceBytes(base + offset, shard_bytes), tmp);
        }
      }
    };
  } else if (staging_ && total_bytes > 0) {
    host_send = HostBytes("mpi_staging_send", total_bytes);
    host_recv = HostBytes("mpi_staging_recv", shard_bytes);
    Kokkos::deep_copy(host_send, ConstDeviceBytes(static_cast<const char*>(send), total_bytes));
    mpi_send = host_send.data();
    mpi_recv = host_recv.data();
    HostBytes staged = host_recv;
    on_complete = [recv, staged, shard_bytes] {
      Kokkos::deep_copy(DeviceBytes(static_cast<char*>(recv), shard_bytes), staged);
    };
  }
  MPI_Request request = MPI_REQUEST_NULL;
  const int64_t sequence = next_sequence();
  const int code = MPI_Ireduce_scatter_block(mpi_send, mpi_recv, n, mpi_type, sum, comm_, &request);
  if (code != MPI_SUCCESS) mpi_failure(code, op, recv_count, type, rank_);
  auto pending =
      std::make_unique<MpiPendingOp>(request, op, recv_count, type, rank_, this, sequence);
  pending->staging_send = host_send;
  pending->staging_recv = host_recv;
  pending->on_complete = std::move(on_complete);
  return pending;
}

std::unique_ptr<detail::PendingOp> MpiCommunicator::post_all_gather(const void* send, void* recv,
                                                                    size_t send_count, DType type) {
  const char* op = "all_gather";
  const int n = checked_count(send_count, op, type, rank_);
  checked_count(send_count * static_cast<size_t>(size_), op, type, rank_);
  const MPI_Datatype mpi_type = types(type).type;
  const size_t shard_bytes = send_count * dtype_size(type);
  const size_t total_bytes = shard_bytes * static_cast<size_t>(size_);
  const size_t offset = static_cast<size_t>(rank_) * shard_bytes;
  const bool in_place = static_cast<const char*>(recv) + offset == static_cast<const char*>(send);
  Kokkos::fence();
  HostBytes host_send, host_recv;
  const void* mpi_send = in_place ? MPI_IN_PLACE : send;
  void* mpi_recv = recv;
  std::function<void()> on_complete;
  if (staging_ && total_bytes > 0) {
    host_recv = HostBytes("mpi_staging_recv", total_bytes);
    if (in_place) {
      Kokkos::deep_copy(Kokkos::subview(host_recv, std::make_pair(offset, offset + shard_bytes)),
                        ConstDeviceBytes(static_cast<const char*>(send), shard_bytes));
    } else {
      host_send = HostBytes("mpi_staging_send", shard_bytes);
      Kokkos::deep_copy(host_send, ConstDeviceBytes(static_cast<const char*>(send), shard_bytes));
      mpi_send = host_send.data();
    }
    mpi_recv = host_recv.data();
    HostBytes staged = host_recv;
    on_complete = [recv, staged, total_bytes] {
      Kokkos::deep_copy(DeviceBytes(static_cast<char*>(recv), total_bytes), staged);
    };
  }
  MPI_Request request = MPI_REQUEST_NULL;
  const int64_t sequence = next_sequence();
  const int code =
      MPI_Iallgather(mpi_send, in_place ? 0 : n, in_place ? MPI_DATATYPE_NULL : mpi_type, mpi_recv,
                     n, mpi_type, comm_, &request);
  if (code != MPI_SUCCESS) mpi_failure(code, op, send_count, type, rank_);
  auto pending =
      std::make_unique<MpiPendingOp>(request, op, send_count, type, rank_, this, sequence);
  pending->staging_send = host_send;
  pending->staging_recv = host_recv;
  pending->on_complete = std::move(on_complete);
  return pending;
}

std::unique_ptr<detail::PendingOp> MpiCommunicator::post_broadcast(void* data, size_t count,
                                                                   DType type, int root) {
  const char* op = "broadcast";
  const int n = checked_count(count, op, type, rank_);
  Kokkos::fence();
  InPlaceBuffer buffer = stage_in_place(data, count * dtype_size(type), staging_);
  MPI_Request request = MPI_REQUEST_NULL;
  const int64_t sequence = next_sequence();
  const int code = MPI_Ibcast(buffer.data, n, types(type).type, root, comm_, &request);
  if (code != MPI_SUCCESS) mpi_failure(code, op, count, type, rank_);
  auto pending = std::make_unique<MpiPendingOp>(request, op, count, type, rank_, this, sequence);
  pending->staging_recv = buffer.host;
  pending->on_complete = std::move(buffer.on_complete);
  return pending;
}

void MpiCommunicator::do_barrier() {
  MPI_Request request = MPI_REQUEST_NULL;
  const int64_t sequence = next_sequence();
  const int code = MPI_Ibarrier(comm_, &request);
  if (code != MPI_SUCCESS) mpi_failure(code, "barrier", 0, DType::F32, rank_);
  MpiPendingOp(request, "barrier", 0, DType::F32, rank_, this, sequence).wait();
}

}  // namespace zm
