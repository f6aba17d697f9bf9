// The MPI backend: non-blocking MPI collectives on a private duplicate of the given communicator,
// on the buffers as they are unless a DeviceStaging points MPI at host copies of device memory it
// cannot read. Waits poll under the watchdog.
#pragma once

#include <mpi.h>

#include <functional>
#include <memory>

#include "comm/communicator.hpp"
#include "comm/watchdog.hpp"

namespace zm {

// One collective as the backend posts it: the buffers MPI works on, and where its result belongs.
struct MpiBuffers {
  const void* send;                // MPI_IN_PLACE for an in-place operation
  size_t send_bytes;               // what MPI reads from send (0 in place)
  void* recv;                      // the only buffer of an in-place operation
  size_t recv_bytes;               // its size
  size_t read_offset, read_bytes;  // in place: the part of recv that MPI reads
  // Where recv's first result_bytes belong once MPI has completed: recv, or for an in-place
  // reduce-scatter this rank's slot (MPI leaves the result at the start).
  void* result;
  size_t result_bytes;
};

// Points a call at host copies of its device buffers; returns what completes it once MPI has
// (nothing for a call of no bytes).
class DeviceStaging {
 public:
  virtual ~DeviceStaging() = default;
  virtual std::function<void()> stage(MpiBuffers& call) = 0;
};

// What makes each MPI communicator's staging (a module's). Without one a device build needs an
// MPI library that reads device memory.
void set_device_staging(std::function<std::unique_ptr<DeviceStaging>()> factory);
bool has_device_staging();
std::unique_ptr<DeviceStaging> make_device_staging();  // nullptr where none is registered
// The MPI library's answer (MPIX_Query_cuda_support, MPICH >= 4, Open MPI); false in host builds.
bool mpi_reads_device_memory();

struct MpiOpInfo;

struct MpiDatatypes {
  MPI_Datatype type;
  MPI_Op sum;
};

class MpiCommunicator : public Communicator {
 public:
  // `staging`: the build's (make_device_staging), unless given.
  MpiCommunicator(MPI_Comm comm, Watchdog& watchdog,
                  std::unique_ptr<DeviceStaging> staging = make_device_staging());
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "mpi"; }
  MPI_Comm mpi_comm() const override { return comm_; }
  void do_progress() override;
  void set_timeout(double seconds) override { watchdog().arm(seconds); }

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
  int64_t next_sequence() { return counted_ ? watchdog().next_sequence() : kLocalRegion; }
  // Posts one collective of `blocks` blocks of op.count elements (each count must fit MPI's
  // int): `start` hands MPI the (staged) buffers and op.count, and returns MPI's error code.
  using MpiStart = std::function<int(const MpiBuffers&, int, MPI_Request*)>;
  std::unique_ptr<detail::PendingOp> post(const MpiOpInfo& op, int blocks, MpiBuffers call,
                                          const MpiStart& start);
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  std::unique_ptr<DeviceStaging> staging_;  // nullptr: MPI gets the buffers as they are
  MPI_Datatype bf16_type_ = MPI_DATATYPE_NULL;
  MPI_Op bf16_sum_ = MPI_OP_NULL;
  bool counted_ = false;  // comm_ spans MPI_COMM_WORLD's ranks: the watchdog counts its collectives
};

}  // namespace zm
