#include "comm/comm_types/mpi_communicator.hpp"

#include <utility>

#include "comm/comm_types/mpi_pending_op.hpp"

// Open MPI declares its CUDA query in mpi-ext.h; MPICH >= 4 in mpi.h.
#if defined(OPEN_MPI) && OPEN_MPI && __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

namespace zm {

namespace {

std::function<std::unique_ptr<DeviceStaging>()>& registered_staging() {
  static std::function<std::unique_ptr<DeviceStaging>()> factory;
  return factory;
}

#if ZEROMINI_HAVE_BF16
void bf16_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const bf16*>(in);
  auto* b = static_cast<bf16*>(inout);
  for (int i = 0; i < *len; ++i)
    b[i] = static_cast<bf16>(static_cast<float>(a[i]) + static_cast<float>(b[i]));
}
#endif

// A private duplicate, whose traffic cannot match anyone else's and whose errors come back as
// codes (reported by mpi_failure) instead of aborting inside the library.
MPI_Comm duplicate(MPI_Comm comm) {
  MPI_Comm copy = MPI_COMM_NULL;
  MPI_Comm_dup(comm, &copy);
  MPI_Comm_set_errhandler(copy, MPI_ERRORS_RETURN);
  return copy;
}

// Whether `a` + `shard` * `bytes` is `b`: a call whose buffers overlap that way is in place.
bool at_slot(const void* a, int shard, size_t bytes, const void* b) {
  return static_cast<const char*>(a) + static_cast<size_t>(shard) * bytes ==
         static_cast<const char*>(b);
}

// An in-place operation's whole buffer, of which MPI reads `read_bytes` from `read_offset`.
MpiBuffers in_place_buffers(void* recv, size_t bytes, size_t read_offset, size_t read_bytes,
                            void* result, size_t result_bytes) {
  return {MPI_IN_PLACE, 0, recv, bytes, read_offset, read_bytes, result, result_bytes};
}
MpiBuffers separate_buffers(const void* send, size_t send_bytes, void* recv, size_t recv_bytes) {
  return {send, send_bytes, recv, recv_bytes, 0, 0, recv, recv_bytes};
}

// Moves an unstaged in-place reduce-scatter result from the start of the buffer to its slot: the
// two never overlap (rank 0's is in place already), so one copy does it.
void move_to_slot(void* slot, const void* start, size_t bytes) {
  using Bytes = Kokkos::View<char*, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using ConstBytes = Kokkos::View<const char*, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  Kokkos::deep_copy(Bytes(static_cast<char*>(slot), bytes),
                    ConstBytes(static_cast<const char*>(start), bytes));
}

}  // namespace

void set_device_staging(std::function<std::unique_ptr<DeviceStaging>()> factory) {
  registered_staging() = std::move(factory);
}

bool has_device_staging() {
  return static_cast<bool>(registered_staging());
}

std::unique_ptr<DeviceStaging> make_device_staging() {
  return has_device_staging() ? registered_staging()() : nullptr;
}

bool mpi_reads_device_memory() {
#if defined(KOKKOS_ENABLE_CUDA) && ((defined(MPICH_NUMVERSION) && MPICH_NUMVERSION >= 40000000) || \
                                    (defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT))
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

MpiCommunicator::MpiCommunicator(MPI_Comm comm, Watchdog& watchdog,
                                 std::unique_ptr<DeviceStaging> staging)
    : Communicator(watchdog),
      comm_(duplicate(comm)),
      staging_(std::move(staging)),
      counted_(Watchdog::spans_world(comm_)) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
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

// Stages `call` where there is staging (else moves an in-place reduce-scatter's result on
// completion).
std::unique_ptr<detail::PendingOp> MpiCommunicator::post(const MpiOpInfo& op, int blocks,
                                                         MpiBuffers call, const MpiStart& start) {
  const int count = checked_count(op.count, op);
  if (blocks > 1) checked_count(op.count * static_cast<size_t>(blocks), op);
  Kokkos::fence();  // the kernels that produced the data are done
  std::function<void()> complete = staging_ ? staging_->stage(call) : nullptr;
  if (!complete && call.result != call.recv)
    complete = [call] { move_to_slot(call.result, call.recv, call.result_bytes); };
  MPI_Request request = MPI_REQUEST_NULL;
  const int64_t sequence = next_sequence();
  const int code = start(call, count, &request);
  if (code != MPI_SUCCESS) mpi_failure(code, op);
  return std::make_unique<MpiPendingOp>(watchdog(), request, op, sequence, std::move(complete));
}

void MpiCommunicator::do_progress() {
  // Any call into the MPI library advances its outstanding non-blocking collectives.
  int flag = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_, &flag, MPI_STATUS_IGNORE);
}

std::unique_ptr<detail::PendingOp> MpiCommunicator::post_all_reduce(void* data, size_t count,
                                                                    DType type) {
  const size_t bytes = count * dtype_size(type);
  return post(
      {"all_reduce", count, type, rank_}, 1, in_place_buffers(data, bytes, 0, bytes, data, bytes),
      [&](const MpiBuffers& b, int n, MPI_Request* request) {
        return MPI_Iallreduce(b.send, b.recv, n, types(type).type, types(type).sum, comm_, request);
      });
}

std::unique_ptr<detail::PendingOp> MpiCommunicator::post_reduce_scatter(const void* send,
                                                                        void* recv,
                                                                        size_t recv_count,
                                                                        DType type) {
  const size_t shard_bytes = recv_count * dtype_size(type);
  const size_t total = shard_bytes * static_cast<size_t>(size_);
  // In place, MPI reads the whole input from the receive buffer and leaves the result at its
  // start; the caller's convention wants it at this rank's slot (the rest is scratch afterwards).
  return post({"reduce_scatter", recv_count, type, rank_}, size_,
              at_slot(send, rank_, shard_bytes, recv)
                  ? in_place_buffers(const_cast<void*>(send), total, 0, total, recv, shard_bytes)
                  : separate_buffers(send, total, recv, shard_bytes),
              [&](const MpiBuffers& b, int n, MPI_Request* request) {
                return MPI_Ireduce_scatter_block(b.send, b.recv, n, types(type).type,
                                                 types(type).sum, comm_, request);
              });
}

std::unique_ptr<detail::PendingOp> MpiCommunicator::post_all_gather(const void* send, void* recv,
                                                                    size_t send_count, DType type) {
  const MPI_Datatype mpi_type = types(type).type;
  const size_t shard_bytes = send_count * dtype_size(type);
  const size_t total = shard_bytes * static_cast<size_t>(size_);
  const bool in_place = at_slot(recv, rank_, shard_bytes, send);
  // In place, MPI reads this rank's shard from its slot and ignores the send count and type.
  return post({"all_gather", send_count, type, rank_}, size_,
              in_place ? in_place_buffers(recv, total, static_cast<size_t>(rank_) * shard_bytes,
                                          shard_bytes, recv, total)
                       : separate_buffers(send, shard_bytes, recv, total),
              [&](const MpiBuffers& b, int n, MPI_Request* request) {
                return MPI_Iallgather(b.send, in_place ? 0 : n,
                                      in_place ? MPI_DATATYPE_NULL : mpi_type, b.recv, n, mpi_type,
                                      comm_, request);
              });
}

std::unique_ptr<detail::PendingOp> MpiCommunicator::post_broadcast(void* data, size_t count,
                                                                   DType type, int root) {
  const size_t bytes = count * dtype_size(type);
  // The root sends from the buffer and the others receive into it: MPI's one buffer.
  return post({"broadcast", count, type, rank_}, 1,
              in_place_buffers(data, bytes, 0, bytes, data, bytes),
              [&](const MpiBuffers& b, int n, MPI_Request* request) {
                return MPI_Ibcast(b.recv, n, types(type).type, root, comm_, request);
              });
}

std::unique_ptr<detail::PendingOp> MpiCommunicator::post_all_to_all(const void* send, void* recv,
                                                                    size_t block_count,
                                                                    DType type) {
  const size_t total = block_count * dtype_size(type) * static_cast<size_t>(size_);
  const MPI_Datatype mpi_type = types(type).type;
  return post({"all_to_all", block_count, type, rank_}, size_,
              separate_buffers(send, total, recv, total),
              [&](const MpiBuffers& b, int n, MPI_Request* request) {
                return MPI_Ialltoall(b.send, n, mpi_type, b.recv, n, mpi_type, comm_, request);
              });
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
