// The MPI backend: non-blocking MPI collectives (MPI_Iallreduce, MPI_Ireduce_scatter_block,
// MPI_Iallgather, MPI_Ibcast, MPI_Ialltoall) on a private duplicate of the given communicator. Host
// memory goes to MPI directly; device memory is staged through host buffers (mpi_staging.hpp, lent
// by a pool the communicator owns) unless MPI reads device memory itself (mpi_gpu_aware.hpp). Waits
// poll under the watchdog (comm/watchdog.hpp), which ends a wait that lasts longer than
// comm.timeout_s.
#pragma once

#include <mpi.h>

#include <memory>

#include "comm/comm_types/staging_pool.hpp"
#include "comm/communicator.hpp"

namespace zm {

struct MpiDatatypes {
  MPI_Datatype type;
  MPI_Op sum;
};

// How device buffers reach MPI. Auto: through host staging where the device is a GPU whose memory
// MPI cannot read, directly otherwise. Always: through host staging even where the device is the
// host, so that tests exercise the staging path on any build.
enum class MpiStaging { Auto, Always };

class MpiCommunicator : public Communicator {
 public:
  MpiCommunicator(MPI_Comm comm, Watchdog& watchdog, MpiStaging staging = MpiStaging::Auto);
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "mpi"; }
  MPI_Comm mpi_comm() const override { return comm_; }
  void do_progress() override;
  void set_timeout(double seconds) override;

  // Whether device buffers go to MPI through host staging (not GPU-aware MPI).
  bool staging() const { return staging_pool_ != nullptr; }
  // The staging buffers (their allocations, how many are lent); nullptr without staging.
  const StagingPool* staging_pool() const { return staging_pool_.get(); }

 protected:
  std::unique_ptr<detail::PendingOp> post_all_reduce(void* data, size_t count, DType type) override;
  std::unique_ptr<detail::PendingOp> post_reduce_scatter(const void* send, void* recv,
                                                         size_t recv_count, DType type) override;
  std::unique_ptr<detail::PendingOp> post_all_gather(const void* send, void* recv,
                                                     size_t send_count, DType type) override;
  std::unique_ptr<detail::PendingOp> post_broadcast(void* data, size_t count, DType type,
                                                    int root) override;
  std::unique_ptr<detail::PendingOp> post_all_to_all(const void* send, void* recv,
                                                     size_t block_count, DType type) override;
  void do_barrier() override;

 private:
  MpiDatatypes types(DType type) const;
  int64_t next_sequence();  // the watchdog's number for the next collective
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  // Set when device memory is staged. Shared with the leases, so a buffer can outlive the
  // communicator if a request does.
  std::shared_ptr<StagingPool> staging_pool_;
  MPI_Datatype bf16_type_ = MPI_DATATYPE_NULL;
  MPI_Op bf16_sum_ = MPI_OP_NULL;
  bool counted_ = false;  // comm_ spans MPI_COMM_WORLD's ranks: the watchdog counts its collectives
};

}  // namespace zm
