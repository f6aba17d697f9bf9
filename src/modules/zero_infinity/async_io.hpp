// Asynchronous reads and writes of swap files: several transfers in flight while the host
// computes, each waited where its data is needed (ZeRO-Infinity's overlap: read unit i + 1 and
// write unit i - 1 while unit i is updated).
//
// Two engines behind one interface, chosen once per run:
//   - io_uring (Linux, through liburing): the transfers are queued to the kernel and complete
//     without a thread of ours; with O_DIRECT they go from the aligned buffer to the drive.
//   - a pool of threads calling pread and pwrite: where io_uring is refused (a seccomp profile
//     in a container, an old kernel, a build without liburing).
// make_async_io says which one a run got and why, for the run to say once.
//
// A transfer that fails, or moves fewer bytes than asked (a full disk, a file shorter than the
// read), is an error at its wait: zm::Error naming the operation, what it moved, the file, the
// offset and the reason. Nothing is retried: the run ends and resumes from its last checkpoint.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "modules/zero_infinity/swap_file.hpp"

namespace zm::nvme {

enum class IoOp { Read, Write };
const char* io_op_name(IoOp op);

// One transfer between `buffer` and `file` at `offset`. Where the file is direct(), buffer,
// bytes and offset are multiples of kAlignment.
struct IoRequest {
  IoOp op = IoOp::Read;
  const SwapFile* file = nullptr;
  void* buffer = nullptr;
  int64_t bytes = 0;
  int64_t offset = 0;
  std::string what;  // what it moves, for messages ("unit 3's Adam m")
};

// The transfers an engine completed.
struct IoFigures {
  int64_t reads = 0, writes = 0;
  int64_t bytes_read = 0, bytes_written = 0;
};

// What the NVMe tier of this process asked its engines to move, counted when it asks (a step's
// writes may complete during the next), and the seconds it waited for them: what a run records
// step by step (nvme_figures.hpp).
struct IoTotals : IoFigures {
  double seconds_waited = 0;
};
IoTotals& this_rank_io();

class AsyncIo {
 public:
  // Waits for the transfers still in flight (their buffers must outlive the engine).
  virtual ~AsyncIo() = default;
  // Starts the transfer and returns its ticket. At most depth() transfers move at once: the
  // threads queue the rest; io_uring first reaps a completion (kept for its own wait).
  virtual int64_t submit(IoRequest request) = 0;
  // Returns once transfer `ticket` has completed; throws zm::Error where it failed or was short.
  // Each ticket is waited exactly once.
  virtual void wait(int64_t ticket) = 0;
  virtual const char* name() const = 0;
  virtual int depth() const = 0;
  const IoFigures& figures() const { return figures_; }

 protected:
  // Counts a completed transfer, or throws for a failed or short one: `done` bytes moved of
  // request.bytes, `error` the errno where it failed (0: none).
  void complete(const IoRequest& request, int64_t done, int error);

 private:
  IoFigures figures_;
};

enum class IoEngine { Auto, Uring, Threads };

// The engine for `requested` with at most `depth` transfers in flight. Auto takes io_uring and
// falls back to the threads where it is refused, setting *fallback to why (left empty when
// io_uring was taken). Uring throws where io_uring is refused; Threads never tries it.
std::unique_ptr<AsyncIo> make_async_io(IoEngine requested, int depth, std::string* fallback);

// Moves the rest of `request` synchronously from byte `done` on (pread/pwrite, resuming after
// partial transfers); returns the bytes moved in all, and sets *error to errno where one failed.
// A read that reaches the end of the file stops short with *error = 0.
int64_t transfer_rest(const IoRequest& request, int64_t done, int* error);

}  // namespace zm::nvme
