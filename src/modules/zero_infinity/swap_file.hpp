// A swap file of the NVMe tier: scratch space for one rank's state in the directory the deck
// names (zero.nvme_dir), read and written in blocks at aligned offsets.
//
// It is scratch, never trusted after the process ends: the file has no name (O_TMPFILE; where the
// file system refuses that, it is unlinked as soon as it is opened), so the kernel removes it when
// the process exits, whatever ends it, and the state a run resumes from is the checkpoint's. Its
// whole size is allocated when it is made (fallocate), so that a disk too small stops the run
// before its first step, naming the directory and the bytes, rather than during one.
//
// Reads and writes bypass the page cache (O_DIRECT) where the file system allows it; where it
// refuses (tmpfs, some network and overlay file systems), the file is opened without it and
// `direct()` says so, for the run to report once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace zm::nvme {

// What O_DIRECT needs of a buffer's address, a transfer's size and its offset (the logical block
// size of every NVMe drive and file system in use; 512-byte devices accept it too).
constexpr int64_t kAlignment = 4096;
inline int64_t aligned_size(int64_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

// Bytes at kAlignment, for O_DIRECT transfers (freed when it goes).
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(int64_t bytes);
  AlignedBuffer(AlignedBuffer&& other) noexcept;
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer();
  void* data() const { return data_; }
  int64_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  int64_t bytes_ = 0;
};

class SwapFile {
 public:
  // A file of `bytes` (rounded up to kAlignment) in `dir`; `label` names it in messages (the
  // rank and what it holds). Throws zm::Error naming the directory when it is missing, not a
  // directory, not writable, or has less free space than `bytes`.
  SwapFile(const std::string& dir, const std::string& label, int64_t bytes);
  SwapFile(const SwapFile&) = delete;
  SwapFile& operator=(const SwapFile&) = delete;
  ~SwapFile();

  int fd() const { return fd_; }
  bool direct() const { return direct_; }
  int64_t bytes() const { return bytes_; }
  // "<dir> (<label>)": where the file is, for messages (it has no name of its own).
  const std::string& where() const { return where_; }

 private:
  int fd_ = -1;
  bool direct_ = false;
  int64_t bytes_ = 0;
  std::string where_;
};

// Throws zm::Error where `dir` is missing, not a directory or not writable by this process.
void check_swap_directory(const std::string& dir);

// The free bytes of the file system holding `dir` for an unprivileged writer (statvfs's f_bavail).
int64_t free_bytes(const std::string& dir);

}  // namespace zm::nvme
