// Collectives that complete on a device stream (NCCL), watched from the watchdog's thread: such a
// collective never blocks the host, so a hung one would show only later (in a fence or a copy),
// and the library reports its errors asynchronously. The monitor retires the collectives whose
// completion events fired; when the oldest has been in flight longer than comm.timeout_s, or an
// asynchronous error comes, it aborts the communicator and says which rank, collective and bytes.
// Device is the seam: NCCL's events and calls, or the tests' fakes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>

namespace zm {

class DeviceOpMonitor {
 public:
  struct Device {
    virtual ~Device() = default;
    virtual bool complete(void* done) = 0;  // the collective's completion event has fired
    virtual void release(void* done) = 0;   // the event is no longer needed
    virtual std::string async_error() = 0;  // the communicator's asynchronous error; "" if none
    virtual void abort() = 0;               // aborts the communicator
  };

  DeviceOpMonitor(Device& device, int rank, std::string backend, std::function<double()> clock);
  ~DeviceOpMonitor();  // releases the events still held
  DeviceOpMonitor(const DeviceOpMonitor&) = delete;
  DeviceOpMonitor& operator=(const DeviceOpMonitor&) = delete;

  void set_timeout(double seconds);
  // A collective just posted; `done` fires when it completes on the device.
  void posted(const char* op, size_t elements, size_t element_bytes, void* done);
  // Retires what completed. On an asynchronous error or a collective older than the timeout:
  // aborts the communicator (once) and returns the failure message; else "".
  std::string poll();
  size_t in_flight() const;
  bool aborted() const;

 private:
  struct InFlight {
    int64_t number;
    const char* op;
    size_t elements, bytes;
    double posted_at;
    void* done;
  };
  std::string fail(const std::string& what);

  Device& device_;
  const int rank_;
  const std::string backend_;
  const std::function<double()> clock_;
  mutable std::mutex mutex_;
  std::deque<InFlight> ops_;
  int64_t posted_count_ = 0;
  double timeout_ = 300.0;
  bool aborted_ = false;
};

}  // namespace zm
