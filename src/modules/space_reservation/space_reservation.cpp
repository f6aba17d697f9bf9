#include "modules/space_reservation/space_reservation.hpp"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>

#include "io/durable_file.hpp"

namespace zm {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

std::string shortfall(const std::string& dir, uint64_t bytes, int error) {
  struct statvfs fs {};
  const bool known = ::statvfs(dir.c_str(), &fs) == 0;
  const double free_bytes = known ? static_cast<double>(fs.f_bavail) * fs.f_frsize : -1.0;
  return fmt::format(
      "{}: needs about {:.1f} MiB, {} ({})", dir, static_cast<double>(bytes) / kMiB,
      known ? fmt::format("{:.1f} MiB free", free_bytes / kMiB) : std::string("free space unknown"),
      errno_text(error));
}

}  // namespace

std::string SpaceReservation::reserve(const std::string& dir, uint64_t bytes) {
  release_all();
  path_ = dir + "/" + kFileName;
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd_ < 0) return fmt::format("{}: cannot create a file there: {}", dir, errno_text(errno));
  if (::fallocate(fd_, 0, 0, static_cast<off_t>(bytes)) == 0) {
    held_ = bytes;
    return "";
  }
  const int error = errno;
  release_all();
  // No fallocate on this file system: judge by what statvfs says is free, and hold nothing.
  if (error == EOPNOTSUPP || error == ENOSYS || error == EINVAL) {
    struct statvfs fs {};
    if (::statvfs(dir.c_str(), &fs) != 0 ||
        static_cast<double>(fs.f_bavail) * fs.f_frsize >= static_cast<double>(bytes))
      return "";
    return shortfall(dir, bytes, ENOSPC);
  }
  return shortfall(dir, bytes, error);
}

void SpaceReservation::release(uint64_t bytes) {
  if (fd_ < 0) return;
  held_ = bytes >= held_ ? 0 : held_ - bytes;
  // Shrinking the file frees its blocks beyond the new size on every POSIX file system.
  if (::ftruncate(fd_, static_cast<off_t>(held_)) != 0) release_all();
}

void SpaceReservation::release_all() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  fd_ = -1;
  held_ = 0;
}

}  // namespace zm
