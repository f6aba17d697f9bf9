#include "comm/comm_types/mpi_communicator.hpp"

#include <utility>

#include "comm/comm_types/mpi_gpu_aware.hpp"
#include "comm/comm_types/mpi_pending_op.hpp"
#include "comm/comm_types/mpi_staging.hpp"
#include "comm/watchdog.hpp"
#include "core/log.hpp"

namespace zm {

namespace {

#if ZEROMINI_HAVE_BF16
void bf16_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const bf16*>(in);
  auto* b = static_cast<bf16*>(inout);
  for (int i = 0; i < *len; ++i)
    b[i] = static_cast<bf16>(static_cast<float>(a[i]) + static_cast<float>(b[i]));
}
#endif

// A private duplicate, so that this communicator's traffic cannot match anyone else's, whose
// errors come back as codes (reported by mpi_failure with the operation and the rank) instead of
// aborting inside the library.
MPI_Comm duplicate(MPI_Comm comm) {
  MPI_Comm copy = MPI_COMM_NULL;
  MPI_Comm_dup(comm, &copy);
  MPI_Comm_set_errhandler(copy, MPI_ERRORS_RETURN);
  return copy;
}

// Where device buffers go, said once per process (communicators are made per shard group too).
void log_device_path(const GpuAwareDecision& decision) {
  static bool said = false;
  if (device_is_host() || said) return;
  said = true;
  log_root("MPI backend: device buffers {} ({})\n",
           decision.aware ? "go to MPI directly" : "are staged through pinned host memory",
           decision.why);
}

// Whether `a` + `shard` * `bytes` is `b`: a call whose buffers overlap that way is in place.
bool at_slot(const void* a, int shard, size_t bytes, const void* b) {
  return static_cast<const char*>(a) + static_cast<size_t>(shard) * bytes ==
         static_cast<const char*>(b);
}

}  // namespace

MpiCommunicator::MpiCommunicator(MPI_Comm comm, Watchdog& watchdog, MpiStaging staging)
    : Communicator(watchdog), comm_(duplicate(comm)), counted_(Watchdog::spans_world(comm_)) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  const GpuAwareDecision decision = mpi_gpu_aware();
  log_device_path(decision);
  if (staging == MpiStaging::Always || (!device_is_host() && !decision.aware))
    staging_pool_ = std::make_shared<StagingPool>();
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
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

MpiDatatypes MpiCommunicator::types(DType type) const {
  switch (type) {
    case DType::F32:
      return {MPI_FLOAT, MPI_SUM};
    case DType::BF16:
      return {bf16_type_, bf16_sum_};
    case DType::U8:
      return {MPI_BYTE, MPI_OP_NULL};  // moved, never reduced (Communicator checks)
  }
  return {MPI_DATATYPE_NULL, MPI_OP_NULL};
}

void MpiCommunicator::set_timeout(double seconds) {
  watchdog().arm(seconds);
}

int64_t MpiCommunicator::next_sequence() {
  return counted_ ? watchdog().next_sequence() : kLocalRegion;
}

void MpiCommunicator::do_progress() {
  // Any call into the MPI library advances its outstanding non-blocking collectives.
  int flag = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_, &flag, MPI_STATUS_IGNORE);
}

std::unique_ptr<detail::PendingOp> MpiCommunicator::post_all_reduce(void* data, size_t count,
                                                                    DType type) {
  const MpiOpInfo op{"all_reduce", count, type, rank_};
  const int n = checked_count(count, op);
  Kokkos::fence();  // the kernels that produced the data are done
  StagedBuffers buffers = stage_in_place(data, count * dtype_size(type), staging_pool_.get());
  MPI_Request request = MPI_REQUEST_NULL;
  const int64_t sequence = next_sequence();
  const int code = MPI_Iallreduce(buffers.send, buffers.recv, n, types(type).type, types(type).sum,
                                  comm_, &request);
  if (code != MPI_SUCCESS) mpi_failure(code, op);
  return std::make_unique<MpiPendingOp>(watchdog(), request, op, sequence, std::move(buffers));
}

std::unique_ptr<detail::PendingOp> MpiCommunicator::post_reduce_scatter(const void* send,
                                                                        void* recv,
                                                                        size_t recv_count,
                                                                        DType type) {
  const MpiOpInfo op{"reduce_scatter", recv_count, type, rank_};
  const int n = checked_count(recv_count, op);
  checked_count(recv_count * static_cast<size_t>(size_), op);
  const size_t shard_bytes = recv_count * dtype_size(type);
  const bool in_place = at_slot(send, rank_, shard_bytes, recv);
  Kokkos::fence();
  StagedBuffers buffers =
      stage_reduce_scatter(send, recv, shard_bytes, rank_, size_, in_place, staging_pool_.get());
  MPI_Request request = MPI_REQUEST_NULL;
  const int64_t sequence = next_sequence();
  const int code = MPI_Ireduce_scatter_block(buffers.send, buffers.recv, n, types(type).type,
                                             types(type).sum, comm_, &request);
  if (code != MPI_SUCCESS) mpi_failure(code, op);
  return std::make_unique<MpiPendingOp>(watchdog(), request, op, sequence, std::move(buffers));
}

std::unique_ptr<detail::PendingOp> MpiCommunicator::post_all_gather(const void* send, void* recv,
                                                                    size_t send_count, DType type) {
  const MpiOpInfo op{"all_gather", send_count, type, rank_};
  const int n = checked_count(send_count, op);
  checked_count(send_count * static_cast<size_t>(size_), op);
  const MPI_Datatype mpi_type = types(type).type;
  const size_t shard_bytes = send_count * dtype_size(type);
  const bool in_place = at_slot(recv, rank_, shard_bytes, send);
  Kokkos::fence();
  StagedBuffers buffers =
      stage_all_gather(send, recv, shard_bytes, rank_, size_, in_place, staging_pool_.get());
  MPI_Request request = MPI_REQUEST_NULL;
  const int64_t sequence = next_sequence();
  // In place, MPI ignores the send count and type.
  const int code =
      MPI_Iallgather(buffers.send, in_place ? 0 : n, in_place ? MPI_DATATYPE_NULL : mpi_type,
                     buffers.recv, n, mpi_type, comm_, &request);
  if (code != MPI_SUCCESS) mpi_failure(code, op);
  return std::make_unique<MpiPendingOp>(watchdog(), request, op, sequence, std::move(buffers));
}

std::unique_ptr<detail::PendingOp> MpiCommunicator::post_broadcast(void* data, size_t count,
                                                                   DType type, int root) {
  const MpiOpInfo op{"broadcast", count, type, rank_};
  const int n = checked_count(count, op);
  Kokkos::fence();
  StagedBuffers buffers = stage_in_place(data, count * dtype_size(type), staging_pool_.get());
  MPI_Request request = MPI_REQUEST_NULL;
  const int64_t sequence = next_sequence();
  // The root sends from the buffer and the others receive into it: MPI's one buffer.
  const int code = MPI_Ibcast(buffers.recv, n, types(type).type, root, comm_, &request);
  if (code != MPI_SUCCESS) mpi_failure(code, op);
  return std::make_unique<MpiPendingOp>(watchdog(), request, op, sequence, std::move(buffers));
}

std::unique_ptr<detail::PendingOp> MpiCommunicator::post_all_to_all(const void* send, void* recv,
                                                                    size_t block_count,
                                                                    DType type) {
  const MpiOpInfo op{"all_to_all", block_count, type, rank_};
  const int n = checked_count(block_count, op);
  checked_count(block_count * static_cast<size_t>(size_), op);
  Kokkos::fence();
  StagedBuffers buffers =
      stage_all_to_all(send, recv, block_count * dtype_size(type), size_, staging_pool_.get());
  MPI_Request request = MPI_REQUEST_NULL;
  const int64_t sequence = next_sequence();
  const MPI_Datatype mpi_type = types(type).type;
  const int code =
      MPI_Ialltoall(buffers.send, n, mpi_type, buffers.recv, n, mpi_type, comm_, &request);
  if (code != MPI_SUCCESS) mpi_failure(code, op);
  return std::make_unique<MpiPendingOp>(watchdog(), request, op, sequence, std::move(buffers));
}

void MpiCommunicator::do_barrier() {
  const MpiOpInfo op{"barrier", 0, DType::F32, rank_};
  MPI_Request request = MPI_REQUEST_NULL;
  const int64_t sequence = next_sequence();
  const int code = MPI_Ibarrier(comm_, &request);
  if (code != MPI_SUCCESS) mpi_failure(code, op);
  MpiPendingOp(watchdog(), request, op, sequence).wait();
}

}  // namespace zm
