// A posted MPI collective until it completes (its wait polls under the watchdog), and how the MPI
// backend fails: an MPI error ends the job, naming the operation, its size and the rank.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <functional>

#include "comm/communicator.hpp"

namespace zm {

class Watchdog;

// What messages say about an operation: "all_reduce of 1024 f32 elements" on rank 3.
struct MpiOpInfo {
  const char* name;
  size_t count;  // elements
  DType type;
  int rank;
};

[[noreturn]] void mpi_failure(int code, const MpiOpInfo& op);

// `count` elements of `op` as the int MPI takes, or the end of the job when it does not fit.
int checked_count(size_t count, const MpiOpInfo& op);

class MpiPendingOp : public detail::PendingOp {
 public:
  // `sequence`: Watchdog::sequence_for's; `on_complete` runs once MPI has completed.
  MpiPendingOp(Watchdog& watchdog, MPI_Request request, const MpiOpInfo& op, int64_t sequence,
               std::function<void()> on_complete = nullptr);
  ~MpiPendingOp() override;
  MpiPendingOp(const MpiPendingOp&) = delete;
  MpiPendingOp& operator=(const MpiPendingOp&) = delete;

  bool test() override;
  void wait() override;

 private:
  void finish();
  Watchdog& watchdog_;
  MPI_Request request_;
  MpiOpInfo op_;
  int64_t sequence_;
  std::function<void()> on_complete_;  // holds a staged call's host buffer until completion
};

}  // namespace zm
