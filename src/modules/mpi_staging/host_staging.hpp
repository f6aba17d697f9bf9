// Host staging for the MPI backend (DeviceStaging, comm/comm_types/mpi_communicator.hpp): where
// the device is a GPU and the MPI library cannot read its memory, each collective works on host
// copies of its buffers, one buffer lent by a StagingPool until the operation completes, and the
// result goes back to the device then.
#pragma once

#include <functional>
#include <memory>
#include <utility>

#include "comm/comm_types/mpi_communicator.hpp"
#include "modules/mpi_staging/staging_pool.hpp"

namespace zm {

class HostStaging : public DeviceStaging {
 public:
  // The pool is shared with the leases, so a buffer can outlive the communicator if a request
  // does (and with a test that counts its allocations).
  explicit HostStaging(std::shared_ptr<StagingPool> pool = std::make_shared<StagingPool>())
      : pool_(std::move(pool)) {}

  // One pool buffer holds the receive buffer's copy (with what MPI reads of it in place) and
  // then the send copy; completion copies the result back to the device.
  std::function<void()> stage(MpiBuffers& call) override;

 private:
  std::shared_ptr<StagingPool> pool_;
};

}  // namespace zm
