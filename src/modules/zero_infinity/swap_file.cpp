#include "modules/zero_infinity/swap_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "core/error.hpp"

namespace zm::nvme {

AlignedBuffer::AlignedBuffer(int64_t bytes) : bytes_(aligned_size(bytes)) {
  data_ = std::aligned_alloc(kAlignment, static_cast<size_t>(bytes_));
  if (data_ == nullptr) throw std::bad_alloc();
  // Touched once here, so that the pages exist before a transfer pins them.
  std::memset(data_, 0, static_cast<size_t>(bytes_));
}

AlignedBuffer::AlignedBuffer(AlignedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& other) noexcept {
  std::swap(data_, other.data_);
  std::swap(bytes_, other.bytes_);
  return *this;
}

AlignedBuffer::~AlignedBuffer() {
  std::free(data_);
}

int64_t free_bytes(const std::string& dir) {
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) != 0)
    fail("{}: cannot read its file system's free space: {}", dir, std::strerror(errno));
  return static_cast<int64_t>(fs.f_bavail) * static_cast<int64_t>(fs.f_frsize);
}

void check_swap_directory(const std::string& dir) {
  struct stat info {};
  if (::stat(dir.c_str(), &info) != 0)
    fail("{}: {}; expected an existing directory for the swap files", dir, std::strerror(errno));
  if (!S_ISDIR(info.st_mode))
    fail("{}: not a directory; expected a directory for the swap files", dir);
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    fail("{}: not writable by this process ({}); expected a directory it can create files in", dir,
         std::strerror(errno));
}

namespace {

// An unnamed file in `dir`: O_TMPFILE, or where that is refused a named one unlinked at once.
// -1 with errno where neither opens.
int open_unnamed(const std::string& dir, int flags) {
  const int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC | flags, 0600);
  if (fd >= 0 || errno == EINVAL) return fd;  // EINVAL: the flags (O_DIRECT), not O_TMPFILE
  std::string path = dir + "/.zeromini-swap-XXXXXX";
  const int named = ::mkostemp(path.data(), O_CLOEXEC | flags);
  if (named >= 0) ::unlink(path.c_str());
  return named;
}

}  // namespace

SwapFile::SwapFile(const std::string& dir, const std::string& label, int64_t bytes)
    : bytes_(aligned_size(bytes)), where_(dir + " (" + label + ")") {
  check_swap_directory(dir);
  const int64_t available = free_bytes(dir);
  if (available < bytes_)
    fail("{}: {} bytes free, {} needed for {}; expected a file system with room for the state", dir,
         available, bytes_, label);
  fd_ = open_unnamed(dir, O_DIRECT);
  direct_ = fd_ >= 0;
  if (fd_ < 0) fd_ = open_unnamed(dir, 0);
  if (fd_ < 0) fail("{}: cannot create a swap file for {}: {}", dir, label, std::strerror(errno));
  // Every block now, so that a full disk shows here; a file system without fallocate gets a
  // sparse file (its free space was checked above).
  if (::fallocate(fd_, 0, 0, bytes_) != 0) {
    const int error = errno;
    if ((error != EOPNOTSUPP && error != ENOSYS) || ::ftruncate(fd_, bytes_) != 0) {
      ::close(fd_);
      fail("{}: cannot allocate {} bytes for {}: {}", dir, bytes_, label, std::strerror(error));
    }
  }
}

SwapFile::~SwapFile() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace zm::nvme
