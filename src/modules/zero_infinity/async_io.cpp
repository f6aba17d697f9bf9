#include "modules/zero_infinity/async_io.hpp"

#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/error.hpp"

#if ZEROMINI_HAVE_LIBURING
#include <liburing.h>
#endif

namespace zm::nvme {

const char* io_op_name(IoOp op) {
  return op == IoOp::Read ? "read" : "write";
}

int64_t transfer_rest(const IoRequest& request, int64_t done, int* error) {
  *error = 0;
  char* bytes = static_cast<char*>(request.buffer);
  while (done < request.bytes) {
    const size_t count = static_cast<size_t>(request.bytes - done);
    const off_t offset = static_cast<off_t>(request.offset + done);
    const ssize_t moved = request.op == IoOp::Read
                              ? ::pread(request.file->fd(), bytes + done, count, offset)
                              : ::pwrite(request.file->fd(), bytes + done, count, offset);
    if (moved < 0 && errno == EINTR) continue;
    if (moved < 0) {
      *error = errno;
      break;
    }
    if (moved == 0) {
      // pwrite of a positive count moves something or fails; a read at the end of file stops.
      if (request.op == IoOp::Write) *error = ENOSPC;
      break;
    }
    done += moved;
  }
  return done;
}

void AsyncIo::complete(const IoRequest& request, int64_t done, int error) {
  if (error != 0 || done != request.bytes) {
    const std::string reason = error != 0
                                   ? std::string(std::strerror(error))
                                   : fmt::format("short {}: {} of {} bytes (the file ends there)",
                                                 io_op_name(request.op), done, request.bytes);
    fail("NVMe {} of {} failed: {} bytes at offset {} of the swap file in {}, after {} bytes: {}",
         io_op_name(request.op), request.what, request.bytes, request.offset, request.file->where(),
         done, reason);
  }
  if (request.op == IoOp::Read) {
    ++figures_.reads;
    figures_.bytes_read += done;
  } else {
    ++figures_.writes;
    figures_.bytes_written += done;
  }
}

IoTotals& this_rank_io() {
  static IoTotals totals;
  return totals;
}

namespace {

// The pool: `depth` threads, each taking the oldest queued transfer and moving it whole.
class ThreadIo final : public AsyncIo {
 public:
  explicit ThreadIo(int depth) : depth_(depth) {
    for (int t = 0; t < depth; ++t) workers_.emplace_back([this] { work(); });
  }
  ~ThreadIo() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    queued_cv_.notify_all();
    for (auto& worker : workers_) worker.join();
  }

  int64_t submit(IoRequest request) override {
    std::lock_guard<std::mutex> lock(mutex_);
    const int64_t ticket = next_ticket_++;
    transfers_.emplace(ticket, Transfer{std::move(request)});
    queue_.push_back(ticket);
    queued_cv_.notify_one();
    return ticket;
  }

  void wait(int64_t ticket) override {
    std::unique_lock<std::mutex> lock(mutex_);
    auto found = transfers_.find(ticket);
    ZM_ASSERT(found != transfers_.end(), "ticket {} was not submitted or was waited already",
              ticket);
    // The element, not the iterator: a submit while this waits may rehash the map.
    Transfer& pending = found->second;
    done_cv_.wait(lock, [&] { return pending.complete; });
    const Transfer transfer = std::move(pending);
    transfers_.erase(ticket);
    lock.unlock();
    complete(transfer.request, transfer.done, transfer.error);
  }

  const char* name() const override { return "threads (pread/pwrite)"; }
  int depth() const override { return depth_; }

 private:
  struct Transfer {
    IoRequest request;
    int64_t done = 0;
    int error = 0;
    bool complete = false;
  };

  void work() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      queued_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      const int64_t ticket = queue_.front();
      queue_.pop_front();
      Transfer& transfer = transfers_.at(ticket);  // stable: a node of the map
      lock.unlock();
      int error = 0;
      const int64_t done = transfer_rest(transfer.request, 0, &error);
      lock.lock();
      transfer.done = done;
      transfer.error = error;
      transfer.complete = true;
      done_cv_.notify_all();
    }
  }

  int depth_;
  std::mutex mutex_;
  std::condition_variable queued_cv_, done_cv_;
  std::deque<int64_t> queue_;
  std::unordered_map<int64_t, Transfer> transfers_;
  int64_t next_ticket_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

#if ZEROMINI_HAVE_LIBURING
// io_uring: a submission per transfer; completions reaped in whatever order they come and kept
// until their wait.
class UringIo final : public AsyncIo {
 public:
  // Throws zm::Error where the kernel refuses a ring.
  explicit UringIo(int depth) : depth_(depth) {
    const int result = io_uring_queue_init(static_cast<unsigned>(depth), &ring_, 0);
    if (result < 0) fail("io_uring_queue_init: {}", std::strerror(-result));
  }
  ~UringIo() override {
    // Transfers still in flight (an error ended the step) must finish before their buffers go.
    while (in_flight_ > 0) reap_one();
    io_uring_queue_exit(&ring_);
  }

  int64_t submit(IoRequest request) override {
    while (in_flight_ >= depth_) reap_one();
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    ZM_ASSERT(sqe != nullptr, "no submission entry with {} of {} in flight", in_flight_, depth_);
    const int64_t ticket = next_ticket_++;
    if (request.op == IoOp::Read)
      io_uring_prep_read(sqe, request.file->fd(), request.buffer,
                         static_cast<unsigned>(request.bytes),
                         static_cast<uint64_t>(request.offset));
    else
      io_uring_prep_write(sqe, request.file->fd(), request.buffer,
                          static_cast<unsigned>(request.bytes),
                          static_cast<uint64_t>(request.offset));
    // The ticket as the entry's data (set_data, not set_data64: liburing before 2.2 has only it).
    io_uring_sqe_set_data(sqe, reinterpret_cast<void*>(static_cast<uintptr_t>(ticket)));
    transfers_.emplace(ticket, Transfer{std::move(request)});
    const int submitted = io_uring_submit(&ring_);
    if (submitted < 0) fail("io_uring_submit: {}", std::strerror(-submitted));
    ++in_flight_;
    return ticket;
  }

  void wait(int64_t ticket) override {
    auto found = transfers_.find(ticket);
    ZM_ASSERT(found != transfers_.end(), "ticket {} was not submitted or was waited already",
              ticket);
    while (!found->second.complete) reap_one();
    const Transfer transfer = std::move(found->second);
    transfers_.erase(found);
    int64_t done = transfer.result < 0 ? 0 : transfer.result;
    int error = transfer.result < 0 ? static_cast<int>(-transfer.result) : 0;
    // A partial transfer (a signal, a device limit) is carried on synchronously; the rest says
    // why it stops short, if it does.
    if (error == 0 && done < transfer.request.bytes)
      done = transfer_rest(transfer.request, done, &error);
    complete(transfer.request, done, error);
  }

  const char* name() const override { return "io_uring"; }
  int depth() const override { return depth_; }

 private:
  struct Transfer {
    IoRequest request;
    int64_t result = 0;  // bytes moved, or -errno
    bool complete = false;
  };

  void reap_one() {
    io_uring_cqe* cqe = nullptr;
    int result;
    do result = io_uring_wait_cqe(&ring_, &cqe);
    while (result == -EINTR);
    if (result < 0) fail("io_uring_wait_cqe: {}", std::strerror(-result));
    const auto ticket =
        static_cast<int64_t>(reinterpret_cast<uintptr_t>(io_uring_cqe_get_data(cqe)));
    auto found = transfers_.find(ticket);
    if (found != transfers_.end()) {
      found->second.result = cqe->res;
      found->second.complete = true;
    }
    io_uring_cqe_seen(&ring_, cqe);
    --in_flight_;
  }

  int depth_;
  io_uring ring_{};
  std::unordered_map<int64_t, Transfer> transfers_;
  int64_t next_ticket_ = 0;
  int in_flight_ = 0;
};
#endif

}  // namespace

std::unique_ptr<AsyncIo> make_async_io(IoEngine requested, int depth, std::string* fallback) {
  ZM_ASSERT(depth >= 1, "depth {}", depth);
  if (fallback != nullptr) fallback->clear();
  if (requested == IoEngine::Threads) return std::make_unique<ThreadIo>(depth);
#if ZEROMINI_HAVE_LIBURING
  try {
    return std::make_unique<UringIo>(depth);
  } catch (const Error& refused) {
    if (requested == IoEngine::Uring) throw;
    if (fallback != nullptr) *fallback = refused.what();
  }
#else
  if (requested == IoEngine::Uring)
    fail("io_uring: this build has no liburing (Debian: apt install liburing-dev, then rebuild)");
  if (fallback != nullptr) *fallback = "this build has no liburing";
#endif
  return std::make_unique<ThreadIo>(depth);
}

}  // namespace zm::nvme
