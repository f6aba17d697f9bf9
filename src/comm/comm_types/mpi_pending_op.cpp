#include "comm/comm_types/mpi_pending_op.hpp"

#include <fmt/format.h>

#include <climits>
#include <string>
#include <utility>

#include "comm/watched_mpi.hpp"
#include "core/abort_job.hpp"

namespace zm {

void mpi_failure(int code, const MpiOpInfo& op) {
  abort_on_mpi_error(code,
                     fmt::format("{} of {} {} elements", op.name, op.count, dtype_name(op.type)));
}

int checked_count(size_t count, const MpiOpInfo& op) {
  if (count > static_cast<size_t>(INT_MAX)) {
    const std::string message = fmt::format(
        "zeromini: rank {}: {} of {} {} elements exceeds MPI's int count limit ({}); use more "
        "ranks or smaller units",
        op.rank, op.name, count, dtype_name(op.type), INT_MAX);
    abort_job(message.c_str(), 1);
  }
  return static_cast<int>(count);
}

MpiPendingOp::MpiPendingOp(Watchdog& watchdog, MPI_Request request, const MpiOpInfo& op,
                           int64_t sequence, std::function<void()> on_complete)
    : watchdog_(watchdog),
      request_(request),
      op_(op),
      sequence_(sequence),
      on_complete_(std::move(on_complete)) {}

MpiPendingOp::~MpiPendingOp() {
  if (request_ != MPI_REQUEST_NULL) wait();
}

bool MpiPendingOp::test() {
  if (request_ == MPI_REQUEST_NULL) return true;
  int done = 0;
  const int code = MPI_Test(&request_, &done, MPI_STATUS_IGNORE);
  if (code != MPI_SUCCESS) mpi_failure(code, op_);
  if (done) finish();
  return done != 0;
}

// Polls under the watchdog; describes the operation only for a wait that does not end at once.
void MpiPendingOp::wait() {
  if (test()) return;
  watched_wait(watchdog_, request_,
               fmt::format("{} of {} {} elements", op_.name, op_.count, dtype_name(op_.type)),
               sequence_);
  finish();
}

// Completion on the device side, once; then what it held (a staged call's host buffer) goes.
void MpiPendingOp::finish() {
  request_ = MPI_REQUEST_NULL;
  if (on_complete_) on_complete_();
  on_complete_ = nullptr;
}

}  // namespace zm
