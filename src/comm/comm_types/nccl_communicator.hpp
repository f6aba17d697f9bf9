// The NCCL backend (CUDA builds): one ncclComm per communicator, its unique id broadcast over MPI.
// Collectives run on their own CUDA stream, ordered by an event after the work queued on Kokkos'
// default execution space; a wait makes the default stream wait for the completion event, so the
// host does not block. The in-place forms are NCCL's own. Nothing can hang: the watchdog's thread
// polls a DeviceOpMonitor of the collectives, and initialisation is a watched region.
#pragma once

#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <functional>
#include <memory>

#include "comm/communicator.hpp"
#include "comm/device_op_monitor.hpp"

namespace zm {

class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(MPI_Comm comm, Watchdog& watchdog);
  ~NcclCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "nccl"; }
  bool completes_on_device_stream() const override { return true; }
  MPI_Comm mpi_comm() const override { return mpi_comm_; }
  void set_timeout(double seconds) override { monitor_->set_timeout(seconds); }

 protected:
  std::unique_ptr<detail::PendingOp> post_all_reduce(void* data, size_t count, DType type) override;
  std::unique_ptr<detail::PendingOp> post_reduce_scatter(const void* send, void* recv,
                                                         size_t recv_count, DType type) override;
  std::unique_ptr<detail::PendingOp> post_all_gather(const void* send, void* recv,
                                                     size_t send_count, DType type) override;
  std::unique_ptr<detail::PendingOp> post_broadcast(void* data, size_t count, DType type,
                                                    int root) override;
  // ncclSend/ncclRecv to and from every peer in one group (NCCL has no all-to-all of its own).
  std::unique_ptr<detail::PendingOp> post_all_to_all(const void* send, void* recv,
                                                     size_t block_count, DType type) override;
  void do_barrier() override;

 private:
  std::unique_ptr<detail::PendingOp> post(const char* op, size_t count, DType type,
                                          const std::function<ncclResult_t()>& enqueue);

  MPI_Comm mpi_comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;          // communication stream
  cudaStream_t compute_stream_ = nullptr;  // Kokkos' default execution space
  cudaEvent_t ready_ = nullptr;
  // The device side of the monitor (events, async errors, abort), then the monitor itself.
  std::unique_ptr<DeviceOpMonitor::Device> device_ops_;
  std::unique_ptr<DeviceOpMonitor> monitor_;
  int watch_id_ = 0;
};

}  // namespace zm
