// Faults of the NVMe tier's drives during a step (the module zero_infinity's fault point
// "nvme.transfer": its subject is the nvme::IoRequest about to be submitted), on the planned rank
// and step. Each makes the kernel itself fail the transfer, so that the run meets it where it
// would meet a real one, at the transfer's wait:
//
//   nvme_io_error     the step's first transfer gets a buffer the process cannot use: the kernel
//                     refuses it (EFAULT)
//   nvme_short_read   the step's first read starts one block before the swap file's end: it
//                     returns fewer bytes than asked, as a truncated file would
//   nvme_disk_full    the step's first write goes to /dev/full (the swap file's descriptor replaced
//                     by dup2): the kernel answers ENOSPC, as a drive that filled up would (the
//                     swap files are allocated whole when made, so only a thin-provisioned or
//                     copy-on-write file system can fill up under a running step). Reads after it
//                     get zeros; no update uses them, the run ends at the write's wait first
//   nvme_kill_in_write  the step's first write is torn: its first half (in whole blocks) written,
//                     then the rank killed (SIGKILL); the swap file is left holding a unit half
//                     old and half new, which a resumed run never reads (it starts from its
//                     checkpoint)
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <any>
#include <csignal>
#include <memory>
#include <string>

#include "core/fault_points.hpp"
#include "modules/fault_injection/planned_fault.hpp"
#include "modules/zero_infinity/async_io.hpp"

namespace zm {

namespace {

void act(const std::string& kind, nvme::IoRequest& request, bool* done) {
  const bool write = request.op == nvme::IoOp::Write;
  if (kind == "nvme_io_error") {
    say("the kernel is given no buffer for the NVMe " + std::string(nvme::io_op_name(request.op)) +
        " of " + request.what);
    request.buffer = nullptr;
  } else if (kind == "nvme_short_read" && !write) {
    say("the NVMe read of " + request.what + " starts one block before the swap file's end");
    request.offset = request.file->bytes() - nvme::kAlignment;
  } else if (kind == "nvme_disk_full" && write) {
    say("the NVMe write of " + request.what + " goes to /dev/full");
    const int full = ::open("/dev/full", O_RDWR | O_CLOEXEC);  // reads return zeros
    if (full < 0 || ::dup2(full, request.file->fd()) < 0) {
      say("/dev/full cannot be opened: no fault");
      return;
    }
    ::close(full);
  } else if (kind == "nvme_kill_in_write" && write) {
    const int64_t half =
        std::max(nvme::kAlignment, request.bytes / 2 / nvme::kAlignment * nvme::kAlignment);
    say("the NVMe write of " + request.what + " is torn: " + std::to_string(half) + " of " +
        std::to_string(request.bytes) + " bytes written, then this rank killed");
    const ssize_t written = ::pwrite(request.file->fd(), request.buffer, static_cast<size_t>(half),
                                     static_cast<off_t>(request.offset));
    (void)written;
    std::raise(SIGKILL);
  } else {
    return;  // not a transfer this fault acts on: the next one
  }
  *done = true;
}

}  // namespace

void register_module_fault_injection_with_zero_infinity() {
  const PlannedFault plan = planned_fault();
  if (plan.kind.rfind("nvme_", 0) != 0) return;
  auto done = std::make_shared<bool>(false);  // once per run: the step's first transfer of its kind
  add_fault_handler("nvme.transfer", [plan, done](int rank, int64_t step, const std::any& subject) {
    if (*done || !plan.at(rank, step)) return;
    act(plan.kind, *std::any_cast<nvme::IoRequest*>(subject), done.get());
  });
}

}  // namespace zm
