#include "comm/device_op_monitor.hpp"

#include <fmt/format.h>

#include <utility>

namespace zm {

DeviceOpMonitor::DeviceOpMonitor(Device& device, int rank, std::string backend,
                                 std::function<double()> clock)
    : device_(device), rank_(rank), backend_(std::move(backend)), clock_(std::move(clock)) {}

DeviceOpMonitor::~DeviceOpMonitor() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const InFlight& op : ops_) device_.release(op.done);
}

void DeviceOpMonitor::set_timeout(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  timeout_ = seconds;
}

void DeviceOpMonitor::posted(const char* op, size_t elements, size_t element_bytes, void* done) {
  const double now = clock_();
  std::lock_guard<std::mutex> lock(mutex_);
  ops_.push_back(InFlight{++posted_count_, op, elements, elements * element_bytes, now, done});
}

std::string DeviceOpMonitor::poll() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (aborted_) return "";
  // One stream: collectives complete in the order they were posted.
  while (!ops_.empty() && device_.complete(ops_.front().done)) {
    device_.release(ops_.front().done);
    ops_.pop_front();
  }
  const std::string error = device_.async_error();
  if (!error.empty()) {
    const std::string during =
        ops_.empty() ? std::string("with no collective in flight")
                     : fmt::format("during {} #{} of {} bytes ({} elements)", ops_.front().op,
                                   ops_.front().number, ops_.front().bytes, ops_.front().elements);
    return fail(fmt::format("{} reported an error {}: {}", backend_, during, error));
  }
  if (ops_.empty()) return "";
  const InFlight& oldest = ops_.front();
  const double waited = clock_() - oldest.posted_at;
  if (waited <= timeout_) return "";
  return fail(fmt::format(
      "{} {} #{} of {} bytes ({} elements) has not completed {:.0f} s after it was posted, more "
      "than comm.timeout_s = {}",
      backend_, oldest.op, oldest.number, oldest.bytes, oldest.elements, waited, timeout_));
}

std::string DeviceOpMonitor::fail(const std::string& what) {
  aborted_ = true;
  device_.abort();
  return fmt::format(
      "zeromini: rank {}: watchdog: {}; the {} communicator was aborted. Aborting the job.", rank_,
      what, backend_);
}

size_t DeviceOpMonitor::in_flight() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ops_.size();
}

bool DeviceOpMonitor::aborted() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return aborted_;
}

}  // namespace zm
